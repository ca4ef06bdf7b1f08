"""Pipeline layer: the batch report job (``actorbroker pipeline report``). Imports pyspark, pandas and the pipeline's own modules only.

    result = run_report(spark, "data", "report-out", since=None, until=None)

1. reads the log once through the ``actorbroker`` data source
   (``records=all``, the columns the tables need) and stages it as Parquet
   in ``OUT/_staging``, so that each aggregation reads only the columns it
   needs instead of decoding the log again;
2. folds it into the tables of :mod:`.aggregates` and writes each as
   Parquet under ``OUT/<table>``;
3. draws the charts (``OUT/charts/*.png``) and writes ``OUT/report.html``;
   the time charts are bucketed by the span of the records (1 s for a
   minute, 6 h for a month: :func:`.charts.pick_bucket`), from the staged
   records rather than the minute tables, so a first try of a few seconds
   shows its traffic and the clients that came and went within a minute.

``since``/``until`` keep records with ``since <= timestamp < until``; online
time then runs up to ``until`` instead of the newest record.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from .aggregates import COLUMNS, PUBLISHED, fold, online_changes
from .charts import Chart, ReportData, pick_bucket, write_charts, write_html
from .logscan import Snapshot, find_log_dir
from .progress import Progress
from .source import FORMAT

__all__ = ["ReportResult", "read_records", "run_report"]


@dataclass(frozen=True, slots=True)
class ReportResult:
    """What a report run did: records and messages read, where it wrote, how long it took."""

    out: Path
    records: int
    messages: int
    html: Path
    seconds: float
    charts: tuple[Chart, ...] = ()


def read_records(spark: SparkSession, data_dir: str | Path, **options: str) -> DataFrame:
    """The columns the tables need of ``records=all`` in ``data_dir``, with enough partitions
    for every core."""
    reader = spark.read.format(FORMAT).option("records", "all").option(
        "minPartitions", str(2 * spark.sparkContext.defaultParallelism)).option(
        "columns", ",".join(COLUMNS))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(data_dir))


def run_report(spark: SparkSession, data_dir: str | Path, out: str | Path, *,
               since: dt.datetime | None = None, until: dt.datetime | None = None,
               progress: Progress | None = None) -> ReportResult:
    """Run the report job (see the module doc); returns what it wrote."""
    started = time.monotonic()
    log_dir = find_log_dir(data_dir)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    progress = progress or Progress(spark, "report", enabled=False)
    snapshot = Snapshot.take(log_dir)
    size = sum(s.size for s in snapshot.segments)
    progress.step(f"reading {log_dir}: {len(snapshot.segments)} segment(s), "
                  f"{size / 1e6:,.1f} MB")
    records = read_records(spark, data_dir)
    if since is not None:
        records = records.filter(F.col("timestamp") >= F.lit(since))
    if until is not None:
        records = records.filter(F.col("timestamp") < F.lit(until))
    staging = out / "_staging"
    records.write.mode("overwrite").parquet(str(staging))
    staged = spark.read.parquet(str(staging))
    publish = F.col("event") == "publish"
    totals = staged.agg(F.count(F.lit(1)), F.sum(publish.cast("long")), F.max("timestamp"),
                        F.min("timestamp"), F.sum((publish & (F.col("qos") == 0)).cast("long"))
                        ).first()
    total, messages = int(totals[0]), int(totals[1] or 0)
    progress.step(f"read {total:,} records ({messages:,} messages); aggregating")
    as_of = F.lit(until if until is not None else totals[2]).cast("timestamp")
    tables = fold(staged, None, as_of=as_of)
    for name in PUBLISHED:
        tables[name].write.mode("overwrite").parquet(str(out / name))
        progress.step(f"wrote {out / name}")
    span = (totals[3], totals[2]) if total else None
    data = _report_data(spark, out, staged, span, since, until)
    data.summary = {"records read": f"{total:,}", "messages": f"{messages:,}",
                    "QoS 0 messages": f"{int(totals[4] or 0):,}", **data.summary}
    if not totals[4]:
        data.notes = ["No QoS 0 messages in the log: the broker logs QoS 0 PUBLISHes only with "
                      "[storage] log_qos0 = true (docs/pipeline.md)."]
    charts = write_charts(data, out / "charts")
    page = write_html(data, out / "report.html", charts)
    shutil.rmtree(staging, ignore_errors=True)
    progress.step(f"wrote {page}")
    return ReportResult(out, total, messages, page, time.monotonic() - started, tuple(charts))


def _bucket(seconds: int) -> Column:
    """The start of the ``seconds`` wide bucket of ``timestamp`` (buckets from the epoch,
    as pandas' ``floor`` cuts them)."""
    return F.timestamp_seconds(F.floor(F.unix_micros("timestamp") / F.lit(seconds * 1_000_000))
                               * F.lit(seconds)).alias("bucket_start")


def _report_data(spark: SparkSession, out: Path, staged: DataFrame,
                 span: tuple[dt.datetime, dt.datetime] | None, since: dt.datetime | None,
                 until: dt.datetime | None) -> ReportData:
    """The small frames the charts and the page show, reduced on Spark."""
    def table(name: str) -> DataFrame:
        return spark.read.parquet(str(out / name))

    topic_totals = table("topic_stats").groupBy("topic").agg(
        F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
        F.max("publishers").alias("max_publishers_per_minute")).orderBy(
        F.desc("messages"), "topic")
    topics = topic_totals.limit(20).toPandas()
    top5 = list(topics["topic"].head(5))
    bucket = pick_bucket(*span) if span else 60
    traffic = staged.filter((F.col("event") == "publish") & F.col("topic").isin(top5)).groupBy(
        _bucket(bucket), "topic").agg(F.count(F.lit(1)).alias("messages")).toPandas()
    # The most clients online at once in a bucket: the highest running sum of the bucket's
    # changes in log order, on top of the level at its start (charts.online_levels).
    in_bucket = Window.partitionBy("bucket_start").orderBy("offset").rowsBetween(
        Window.unboundedPreceding, 0)
    online = online_changes(staged).select(_bucket(bucket), "offset", "delta").select(
        "bucket_start", "delta", F.sum("delta").over(in_bucket).alias("running")).groupBy(
        "bucket_start").agg(F.sum("delta").alias("delta"), F.max("running").alias("rise")
                            ).toPandas()
    sessions = table("sessions").orderBy(F.desc("reconnects"), "client_id").select(
        "client_id", "reconnects", "connects", "disconnects", "online_seconds",
        "longest_offline_seconds", "online").limit(20).toPandas()
    latest = table("latest_values").orderBy(F.desc("timestamp"), "topic").select(
        "topic", "timestamp", "qos", "client_id", "payload").limit(20).toPandas()
    count = table("topic_stats").agg(F.count_distinct("topic")).first()
    summary: dict[str, object] = {
        "topics": f"{count[0]:,}", "clients with sessions": f"{table('sessions').count():,}",
        "first record (UTC)": span[0] if span else None,
        "last record (UTC)": span[1] if span else None,
        "time span": f"{(span[1] - span[0]).total_seconds():,.1f} s" if span else None,
    }
    if since is not None or until is not None:
        summary["time range"] = f"{since or '...'} to {until or '...'}"
    return ReportData("actorbroker report", summary, traffic, online, sessions, topics, latest,
                      span, bucket)
