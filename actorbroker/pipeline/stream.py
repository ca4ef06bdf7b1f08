"""Pipeline layer: the streaming job (``actorbroker pipeline stream``), exactly once into Parquet. Imports pyspark and the pipeline's own modules only.

    query = start_stream(spark, "data", "out", "checkpoint", available_now=True)
    query.awaitTermination()

A Structured Streaming query reads the log (``records=all``) and, in
``foreachBatch``, folds each micro-batch into the previous version of the
tables (:func:`.aggregates.fold`, the same code as the report). Layout:

    OUT/_versions/<batch>/<table>/     every table of micro-batch <batch>, then _COMPLETE
    OUT/<table> -> _versions/<batch>/<table>    symlinks, swapped atomically (os.replace)
    OUT/_stream.json                   the last published batch and its as_of

Exactly once: Spark runs micro-batch N again with the same offsets until its
checkpoint commit is written, and N's version depends only on N's records
and the newest complete version below N; writing it again overwrites it
with the same rows. So after any crash and restart each record is in the
published tables exactly once. Readers see whole versions only (the
symlinks move after a version is complete). The two newest versions are
kept, older ones deleted.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from .aggregates import COLUMNS, PUBLISHED, fold
from .logscan import find_log_dir
from .source import FORMAT

__all__ = ["VersionedTables", "start_stream"]

_COMPLETE = "_COMPLETE"


class VersionedTables:
    """The ``foreachBatch`` function: one version of every table per micro-batch."""

    def __init__(self, out: str | Path, keep: int = 2) -> None:
        self.out = Path(out).resolve()
        self.keep = max(2, keep)
        (self.out / "_versions").mkdir(parents=True, exist_ok=True)

    def versions(self) -> list[int]:
        """Complete versions, oldest first."""
        found = []
        for entry in (self.out / "_versions").iterdir():
            if entry.name.isdigit() and (entry / _COMPLETE).exists():
                found.append(int(entry.name))
        return sorted(found)

    def load(self, spark: SparkSession, below: int) -> dict[str, DataFrame] | None:
        """The newest complete version below ``below`` (None: there is none)."""
        older = [v for v in self.versions() if v < below]
        if not older:
            return None
        where = self.out / "_versions" / str(older[-1])
        return {name: spark.read.parquet(str(where / name)) for name in PUBLISHED}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        records = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            tables = fold(records, self.load(spark, batch_id))
            target = self.out / "_versions" / str(batch_id)
            if target.exists():
                shutil.rmtree(target)  # a replay of this batch: write it again, whole
            for name in PUBLISHED:
                tables[name].write.mode("overwrite").parquet(str(target / name))
            (target / _COMPLETE).touch()
        finally:
            records.unpersist()
        self._publish(batch_id)

    def _publish(self, batch_id: int) -> None:
        for name in PUBLISHED:
            link = self.out / name
            temporary = self.out / f".{name}.{batch_id}.link"
            if temporary.is_symlink() or temporary.exists():
                temporary.unlink()
            os.symlink(Path("_versions") / str(batch_id) / name, temporary)
            if link.exists() and not link.is_symlink():
                shutil.rmtree(link)  # a report's table in the same OUT: the stream owns it now
            os.replace(temporary, link)
        for old in self.versions()[:-self.keep]:
            shutil.rmtree(self.out / "_versions" / str(old), ignore_errors=True)
        state = self.out / "_stream.json"
        temporary = self.out / "._stream.json"
        temporary.write_text(json.dumps({"batch": batch_id, "versions": self.versions()}) + "\n")
        os.replace(temporary, state)


def start_stream(spark: SparkSession, data_dir: str | Path, out: str | Path,
                 checkpoint: str | Path, *, available_now: bool = False,
                 max_records: int | None = None, trigger_seconds: float = 10.0,
                 fail_on_data_loss: bool = True, name: str | None = None) -> StreamingQuery:
    """Start the streaming job; the caller awaits or stops the query."""
    find_log_dir(data_dir)  # a clear error before Spark plans anything
    reader = spark.readStream.format(FORMAT).option("records", "all").option(
        "columns", ",".join(COLUMNS)).option(
        "failOnDataLoss", str(fail_on_data_loss).lower()).option(
        "minPartitions", str(2 * spark.sparkContext.defaultParallelism))
    if max_records is not None:
        reader = reader.option("maxRecordsPerBatch", str(max_records))
    writer = reader.load(str(data_dir)).writeStream.foreachBatch(VersionedTables(out)).option(
        "checkpointLocation", str(Path(checkpoint).resolve()))
    if name:
        writer = writer.queryName(name)
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{trigger_seconds} seconds")
    return writer.start()
