"""Pipeline layer: ``actorbroker pipeline report | stream``, called by actorbroker.cli. Imports the stdlib at load; pyspark and the jobs when a command runs.

:func:`add_parser` defines the arguments for actorbroker.cli (stdlib only,
so ``--help`` never starts Java) and :func:`run` runs a job. Errors an operator can fix (no data dir, no Java, a
bad master URL, bad times, records lost under a stream) print one line
``error: ...`` on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from typing import Any

from .errors import PipelineError

__all__ = ["add_parser", "parse_time", "run"]

_RELATIVE = re.compile(r"-?(\d+(?:\.\d+)?)\s*([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``pipeline report|stream`` to the CLI's subcommands."""
    pipeline = sub.add_parser(
        "pipeline", help="Spark jobs over the commit log (needs actorbroker[pipeline] and Java)",
        description="Query the broker's history with Spark: local mode by default, a cluster "
                    "with --master (docs/pipeline.md).")
    jobs = pipeline.add_subparsers(dest="pipeline_command", metavar="JOB", required=True)
    report = jobs.add_parser(
        "report", help="Parquet tables and report.html with charts",
        description="Read the log once and write topic_stats, client_stats, latest_values, "
                    "sessions, online_clients (Parquet) and report.html with PNG charts to OUT.")
    stream = jobs.add_parser(
        "stream", help="the same tables, kept up to date by a Structured Streaming query",
        description="Fold new records into the tables in OUT, exactly once across restarts "
                    "(offsets in --checkpoint). Runs until stopped, or with --available-now "
                    "until the records committed at its start are read.")
    for job in (report, stream):
        job.add_argument("--data-dir", required=True, metavar="DIR",
                         help="the broker's data directory (its log/ is read)")
        job.add_argument("--out", required=True, metavar="DIR", help="output directory")
        job.add_argument("--master", metavar="URL",
                         help="Spark master: local[*] (default), local[N], spark://HOST:PORT, ...")
        job.add_argument("--quiet", action="store_true", help="no progress lines")
    report.add_argument("--since", metavar="T", help="from this time: ISO 8601, Unix seconds, "
                                                     "or -30m / -2h / -7d before now")
    report.add_argument("--until", metavar="T", help="up to (excluding) this time")
    stream.add_argument("--checkpoint", required=True, metavar="DIR",
                        help="Spark checkpoint directory (offsets); keep it with OUT")
    stream.add_argument("--available-now", action="store_true",
                        help="read what is committed now, in micro-batches, then stop")
    stream.add_argument("--max-records-per-batch", type=int, metavar="N",
                        help="admission control: at most N log records per micro-batch")
    stream.add_argument("--trigger-seconds", type=float, default=10.0, metavar="S",
                        help="micro-batch interval when running continuously (default 10)")
    stream.add_argument("--skip-data-loss", action="store_true",
                        help="skip records deleted by retention before they were read "
                             "(default: fail)")


def parse_time(text: str, now: dt.datetime | None = None) -> dt.datetime:
    """A time for --since/--until: ISO 8601 (UTC unless it says), Unix seconds, ``now``,
    or a duration before now such as ``-30m``, ``2h``, ``7d``."""
    now = now or dt.datetime.now(dt.UTC)
    value = text.strip()
    if value == "now":
        return now
    relative = _RELATIVE.fullmatch(value)
    if relative:
        return now - dt.timedelta(seconds=float(relative.group(1)) * _UNITS[relative.group(2)])
    if re.fullmatch(r"\d{9,}(\.\d+)?", value):
        return dt.datetime.fromtimestamp(float(value), dt.UTC)
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PipelineError(f"bad time {text!r}: use ISO 8601 (2025-01-31T12:00:00Z), Unix "
                            "seconds, now, or a duration before now (-30m, 2h, 7d)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def run(args: argparse.Namespace) -> int:
    """Run ``args.pipeline_command``; the exit code."""
    try:
        return _run(args)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):  # a Spark job failed
            print(f"error: {_cause(str(exc))}", file=sys.stderr)
            return 1
        raise
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    from .logscan import find_log_dir

    find_log_dir(args.data_dir)  # before Java starts: the most common mistake, said at once
    since = parse_time(args.since) if getattr(args, "since", None) else None
    until = parse_time(args.until) if getattr(args, "until", None) else None
    if since and until and since >= until:
        raise PipelineError(f"--since ({since}) must be before --until ({until})")
    from .progress import Progress
    from .spark import start_session

    spark = start_session(args.master)
    try:
        with Progress(spark, args.pipeline_command, enabled=not args.quiet) as progress:
            if args.pipeline_command == "report":
                from .report import run_report

                result = run_report(spark, args.data_dir, args.out, since=since, until=until,
                                    progress=progress)
                print(f"{result.html}: {result.records:,} records, {result.messages:,} messages, "
                      f"{result.seconds:.1f} s")
                return 0
            return _stream(spark, args, progress)
    finally:
        spark.stop()


def _stream(spark: Any, args: argparse.Namespace, progress: Any) -> int:
    from pyspark.errors import StreamingQueryException
    from pyspark.sql.streaming import StreamingQueryListener

    from .stream import start_stream

    class Lines(StreamingQueryListener):  # type: ignore[misc]
        def onQueryStarted(self, event: Any) -> None:
            progress.step(f"stream started (id {event.id})")

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            if p.numInputRows:
                progress.step(f"batch {p.batchId}: {p.numInputRows:,} records, "
                              f"{p.processedRowsPerSecond:,.0f} records/s")

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    listener = Lines()
    if not args.quiet:
        spark.streams.addListener(listener)
    query = start_stream(spark, args.data_dir, args.out, args.checkpoint,
                         available_now=args.available_now, max_records=args.max_records_per_batch,
                         trigger_seconds=args.trigger_seconds,
                         fail_on_data_loss=not args.skip_data_loss)
    try:
        query.awaitTermination()
    except StreamingQueryException as exc:
        raise PipelineError(f"the stream failed: {_cause(str(exc))}") from None
    except KeyboardInterrupt:
        query.stop()
        raise
    finally:
        if not args.quiet:
            spark.streams.removeListener(listener)
    print(f"{args.out}: tables up to date (checkpoint {args.checkpoint})")
    return 0


def _cause(message: str) -> str:
    """The line of a Spark error that names the pipeline's own error, else the first line."""
    for line in message.splitlines():
        if "DataLossError" in line or "PipelineError" in line or "SegmentGoneError" in line:
            return line.split("Error: ", 1)[-1].strip()
    return message.strip().splitlines()[0] if message.strip() else "unknown error"
