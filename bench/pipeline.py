"""Benchmark: the data pipeline (actorbroker.pipeline) on this machine.

Run with ``python -m bench.pipeline`` (needs ``actorbroker[pipeline]`` and
Java) from the project root. Prints figures; asserts nothing.

1. **Data source batch read**: ``spark.read.format("actorbroker")`` on
   ``local[2]`` over a log of ``--records`` QoS 1 PUBLISH records with
   100-byte payloads, forced with an aggregate over every row
   (``count(*)``, ``sum(payload_size)``): records/s, best of ``--rounds``
   (goal: at least 500k/s). For reference, the same decoding in this one
   process without Spark (``read_chunks`` + Arrow batches).
2. **Report end to end**: ``actorbroker pipeline report --master local[2]``
   as a user runs it (a new process: JVM start included) over a log of
   ``--report-records`` records (10M by default): 1,000 devices publishing
   to 1,000 topics, about 1,000 messages/s of broker time, and every
   1,000th record a device going offline or coming back (a spread of
   devices, so that each reconnects several times over 10M records).

Logs are written with CommitLog (mode os) under ``--dir`` (in the
temporary directory by default, about 2 GB) and, with ``--keep``, reused
by the next run instead of written again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import (
    DisconnectCause,
    PublishAccepted,
    Record,
    SessionConnected,
    SessionDisconnected,
)

T0_US = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z
PAYLOAD = bytes(range(100))


def write_messages(data_dir: Path, count: int) -> None:
    """``count`` PublishAccepted records, 100-byte payloads, 1 ms apart, 100 topics and clients."""
    with CommitLog(data_dir / "log", mode="os") as log:
        for start in range(0, count, 20_000):
            log.append([PublishAccepted(f"devices/{i % 100}/temperature", PAYLOAD, qos=1,
                                client_id=f"device-{i % 100}", packet_id=i % 65535 + 1,
                                timestamp_us=T0_US + i * 1000)
                        for i in range(start, min(count, start + 20_000))])
            log.sync()


def report_records(start: int, stop: int, online: dict[int, bool]) -> list[Record]:
    """Records ``start..stop`` of the report log (see the module docstring); ``online``
    carries each device's state from one call to the next."""
    out: list[Record] = []
    for i in range(start, stop):
        ts = T0_US + i * 1000
        device = i % 1000
        if i % 1000 == 999:  # a session event: some device goes offline or comes back
            who = ((i // 1000) ** 2 * 31 + 7 * (i // 1000)) % 1000  # uneven, deterministic
            if online.get(who, False):
                out.append(SessionDisconnected(f"device-{who}", cause=DisconnectCause.CONNECTION_LOST,
                                               expiry_interval=3600, timestamp_us=ts))
            else:
                out.append(SessionConnected(f"device-{who}", keep_alive=60, timestamp_us=ts))
            online[who] = not online.get(who, False)
            continue
        out.append(PublishAccepted(f"site/{device // 100}/device/{device}/temperature", PAYLOAD,
                           qos=1, client_id=f"device-{device}", packet_id=i % 65535 + 1,
                           timestamp_us=ts))
    return out


def write_report_log(data_dir: Path, count: int) -> None:
    online: dict[int, bool] = {}
    with CommitLog(data_dir / "log", mode="os") as log:
        for start in range(0, count, 20_000):
            log.append(report_records(start, min(count, start + 20_000), online))
            log.sync()


def ensure(data_dir: Path, count: int, writer: object, keep: bool) -> None:
    marker = data_dir / f".complete-{count}"
    if keep and marker.exists():
        print(f"  reusing {data_dir} ({count:,} records)")
        return
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.perf_counter()
    writer(data_dir, count)  # type: ignore[operator]
    marker.touch()
    size = sum(p.stat().st_size for p in (data_dir / "log").glob("*.log"))
    print(f"  wrote {count:,} records ({size / 1e6:,.0f} MB) to {data_dir} in "
          f"{time.perf_counter() - started:.1f} s")


def bench_decode(data_dir: Path, count: int) -> float:
    from actorbroker.pipeline.logscan import Snapshot, find_log_dir, read_chunks
    from actorbroker.pipeline.schema import batches

    log_dir = find_log_dir(data_dir)
    snapshot = Snapshot.take(log_dir)
    started = time.perf_counter()
    cpu = time.process_time()
    rows = 0
    for rng in snapshot.ranges(None, snapshot.end):
        for chunk in read_chunks(log_dir, rng):
            rows += sum(b.num_rows for b in batches("messages", chunk))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    assert rows == count, (rows, count)
    print(f"  decode in one process, no Spark: {rows / elapsed:,.0f} records/s "
          f"({rows / cpu:,.0f} per CPU second)")
    return rows / elapsed


def tree_cpu(root: int) -> float:
    """CPU seconds used so far by process ``root`` and its descendants (reaped ones included)."""
    import psutil

    total = 0.0
    try:
        processes = [psutil.Process(root)]
        processes += processes[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _sample_tree(process: subprocess.Popen[str]) -> dict[int, float]:
    """CPU seconds per process of ``process``'s tree, sampled until it exits."""
    seen: dict[int, float] = {}
    while process.poll() is None:
        import psutil

        try:
            tree = [psutil.Process(process.pid)]
            tree += tree[0].children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for member in tree:
            try:
                times = member.cpu_times()
            except psutil.NoSuchProcess:
                continue
            seen[member.pid] = times.user + times.system
        time.sleep(0.5)  # sampling interval of a measurement, not a synchronisation
    return seen


def bench_read(data_dir: Path, count: int, rounds: int) -> list[float]:
    from pyspark.sql import functions as F

    from actorbroker.pipeline.spark import start_session

    started = time.perf_counter()
    spark = start_session("local[2]", shuffle_partitions=2)
    print(f"  SparkSession (local[2]) started in {time.perf_counter() - started:.1f} s")
    rates = []
    try:
        for _ in range(rounds):
            frame = spark.read.format("actorbroker").option("minPartitions", "4").load(str(data_dir))
            cpu = tree_cpu(os.getpid())
            started = time.perf_counter()
            row = frame.agg(F.count(F.lit(1)), F.sum("payload_size")).first()
            elapsed = time.perf_counter() - started
            cpu = tree_cpu(os.getpid()) - cpu
            assert row[0] == count and row[1] == 100 * count, row
            rates.append(count / elapsed)
            print(f"  read {count:,} records in {elapsed:.2f} s: {count / elapsed:,.0f} records/s; "
                  f"{cpu:.1f} CPU s (JVM and Python workers): "
                  f"{2 * count / cpu:,.0f} records/s on 2 idle cores")
    finally:
        spark.stop()
    return rates


def bench_report(data_dir: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "actorbroker.cli", "pipeline", "report",
                                "--data-dir", str(data_dir), "--out", str(out),
                                "--master", "local[2]"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[int, float] = {}
    reader = threading.Thread(target=lambda: seen.update(_sample_tree(process)), daemon=True)
    reader.start()
    stdout, stderr = process.communicate()
    elapsed = time.perf_counter() - started
    reader.join()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    cpu = sum(seen.values())
    print(f"  CPU: {cpu:.0f} s in the report's processes (JVM, Python workers): about "
          f"{cpu / 2:.0f} s of wall time on 2 idle cores")
    if done.returncode != 0:
        raise SystemExit(f"report failed:\n{done.stderr[-4000:]}")
    steps = [line for line in done.stderr.splitlines() if line.startswith("[report]") and "s " in line
             and "tasks" not in line]
    for line in steps:
        print("   ", line)
    print(f"  {done.stdout.strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--report-records", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "actorbroker-bench-pipeline",
                        help="where the logs go (about 2 GB with the defaults)")
    parser.add_argument("--keep", action="store_true", help="reuse logs written by an earlier run")
    parser.add_argument("--skip-report", action="store_true")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    read_dir = args.dir / "read"
    print(f"1. data source batch read ({args.records:,} x 100-byte payloads)")
    ensure(read_dir, args.records, write_messages, args.keep)
    bench_decode(read_dir, args.records)
    rates = bench_read(read_dir, args.records, args.rounds)
    print(f"  best: {max(rates):,.0f} records/s on local[2] (goal 500,000)")
    if not args.skip_report:
        report_dir = args.dir / "report"
        print(f"2. report end to end ({args.report_records:,} records)")
        ensure(report_dir, args.report_records, write_report_log, args.keep)
        elapsed = bench_report(report_dir, args.dir / "report-out")
        print(f"  report end to end: {elapsed:.1f} s "
              f"({args.report_records / elapsed:,.0f} records/s overall)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
