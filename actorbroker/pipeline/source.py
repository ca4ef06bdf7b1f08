"""Pipeline layer: the PySpark Python Data Source ``actorbroker`` over a broker's commit log. Imports pyspark, pyarrow and actorbroker.persistence only.

    spark.dataSource.register(LogDataSource)        # actorbroker.pipeline.spark does it
    spark.read.format("actorbroker").load(DATA_DIR)                     # messages
    spark.read.format("actorbroker").option("records", "sessions").load(DATA_DIR)
    spark.readStream.format("actorbroker").option("maxRecordsPerBatch", 100000).load(DATA_DIR)

Batch: one partition per segment, read up to the committed offset taken when
the query is planned. Streaming: an offset is ``{"segment": base,
"position": p}``, the log offset ``base + p`` in the segment ``base`` (the
next record to read); a micro-batch is one partition per segment between two
offsets. Admission control: ``maxRecordsPerBatch`` (log records, all types)
through ``ReadMaxRows``; ``Trigger.AvailableNow`` stops at the committed
offset seen when the query starts. A stream never reads past the committed
offset, so a torn tail is never read. When retention deletes records a
stream has not read, the query fails with DataLossError, unless
``failOnDataLoss`` is false: then they are skipped with a warning (as
Kafka's option of the same name).

Options (case-insensitive; docs/pipeline.md has the table):
``records`` (messages | sessions), ``includeRestated`` (false),
``committedOnly`` (true; batch only: false reads up to the last complete,
valid frame), ``verifyChecksums`` (true), ``chunkBytes`` (8 MiB),
``maxRecordsPerBatch``, ``startingOffsets`` (earliest | latest),
``failOnDataLoss`` (true), ``minPartitions`` (cut segments into pieces, up
to 4 each, when there are fewer segments than this), ``columns`` (a
comma-separated subset of the columns, in that order: Python data sources
get no column pruning from Spark, and fewer columns cross to the JVM faster).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from .errors import PipelineError
from .logscan import (
    DEFAULT_CHUNK_BYTES,
    Range,
    SegmentGoneError,
    Snapshot,
    advance,
    find_log_dir,
    read_chunks,
)
from .schema import RECORD_KINDS, batches, check_columns, spark_schema

__all__ = ["FORMAT", "LogDataSource", "Options", "SegmentPartition"]

FORMAT = "actorbroker"
_log = logging.getLogger("actorbroker.pipeline")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


@dataclass(frozen=True, slots=True)
class Options:
    """The data source's options, checked once on the driver."""

    log_dir: Path
    records: str = "messages"
    include_restated: bool = False
    committed_only: bool = True
    verify: bool = True
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_records: int | None = None
    starting: str = "earliest"
    fail_on_data_loss: bool = True
    min_partitions: int = 0
    columns: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Options:
        """Options from ``load(path)`` and ``.option(...)``; PipelineError when one is wrong."""
        given = {k.lower(): str(v) for k, v in options.items()}
        path = given.pop("path", None)
        if not path:
            raise PipelineError("give the data dir: spark.read.format('actorbroker').load(DATA_DIR)")
        records = given.pop("records", "messages").lower()
        if records not in RECORD_KINDS:
            raise PipelineError(f"option records must be one of {sorted(RECORD_KINDS)}, "
                                f"not {records!r}")
        starting = given.pop("startingoffsets", "earliest").lower()
        if starting not in ("earliest", "latest"):
            raise PipelineError(f"option startingOffsets must be earliest or latest, not {starting!r}")
        max_records = given.pop("maxrecordsperbatch", None)
        min_partitions = given.pop("minpartitions", None)
        columns = given.pop("columns", None)
        if columns is not None:
            try:
                names = check_columns(records, tuple(n.strip() for n in columns.split(",")
                                                     if n.strip()))
            except ValueError as exc:
                raise PipelineError(f"option columns: {exc}") from None
        parsed = cls(
            find_log_dir(path), records,
            include_restated=_flag(given, "includerestated", False),
            committed_only=_flag(given, "committedonly", True),
            verify=_flag(given, "verifychecksums", True),
            chunk_bytes=_positive(given.pop("chunkbytes", str(DEFAULT_CHUNK_BYTES)), "chunkBytes"),
            max_records=None if max_records is None else _positive(max_records, "maxRecordsPerBatch"),
            starting=starting,
            fail_on_data_loss=_flag(given, "failondataloss", True),
            min_partitions=0 if min_partitions is None else _positive(min_partitions,
                                                                      "minPartitions"),
            columns=None if columns is None else names,
        )
        if given:
            raise PipelineError(f"unknown option(s) {sorted(given)} for format {FORMAT!r}")
        return parsed


def _flag(given: dict[str, str], key: str, default: bool) -> bool:
    value = given.pop(key, None)
    if value is None:
        return default
    if value.lower() in _TRUE + _FALSE:
        return value.lower() in _TRUE
    raise PipelineError(f"option {key} must be true or false, not {value!r}")


def _positive(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise PipelineError(f"option {name} must be a positive integer, not {value!r}")
    return number


class SegmentPartition(InputPartition):
    """One segment's share of a read (a :class:`~.logscan.Range`)."""

    def __init__(self, rng: Range) -> None:
        super().__init__(rng)
        self.range = rng


def _read(options: Options, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, SegmentPartition):
        return  # Spark's stand-in partition when there is nothing to read
    rng = partition.range
    try:
        for chunk in read_chunks(options.log_dir, rng, chunk_bytes=options.chunk_bytes,
                                 verify=options.verify):
            yield from batches(options.records, chunk, include_restated=options.include_restated,
                               columns=options.columns)
    except SegmentGoneError as exc:
        if options.fail_on_data_loss:
            raise SegmentGoneError(f"{exc}; set the option failOnDataLoss=false to skip it") from None
        _log.warning("%s; skipped (failOnDataLoss=false)", exc)


class LogDataSource(DataSource):
    """``format("actorbroker")``: the broker's commit log as messages or session events."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        options = Options.parse(self.options)
        return spark_schema(options.records, options.columns)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(Options.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = Options.parse(self.options)
        if not options.committed_only:
            raise PipelineError("committedOnly=false is for batch reads only: a stream reads "
                                "committed records, whose offsets never change")
        return StreamReader(options)


class BatchReader(DataSourceReader):
    """A batch read: every record below the committed offset when the query is planned."""

    def __init__(self, options: Options) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        snapshot = Snapshot.take(options.log_dir, committed_only=options.committed_only)
        stop = snapshot.end if options.committed_only else None
        ranges = snapshot.ranges(None, stop, min_ranges=options.min_partitions)
        return [SegmentPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


def _offset(snapshot: Snapshot, offset: int) -> dict[str, int]:
    base = snapshot.segment_of(offset)
    return {"segment": base, "position": offset - base}


def _log_offset(offset: Mapping[str, Any]) -> int:
    return int(offset["segment"]) + int(offset["position"])


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of committed records, with admission control and AvailableNow."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.target: int | None = None  # AvailableNow: where this run stops

    def _snapshot(self) -> Snapshot:
        return Snapshot.take(self.options.log_dir)

    def _head(self, snapshot: Snapshot, start: int) -> int:
        if snapshot.end is None:  # no committed file (yet): nothing is known to be final
            return start
        return snapshot.end if self.target is None else min(snapshot.end, self.target)

    def initialOffset(self) -> dict[str, int]:
        snapshot = self._snapshot()
        if self.options.starting == "latest" or snapshot.first is None:
            return _offset(snapshot, snapshot.head())
        return _offset(snapshot, snapshot.first)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, int]:
        snapshot = self._snapshot()
        begin = snapshot.check_lost(_log_offset(start), fail=self.options.fail_on_data_loss,
                                    what="actorbroker stream")
        head = max(begin, self._head(snapshot, begin))
        end = head
        if isinstance(limit, ReadMaxRows) and head > begin:
            end = advance(snapshot, begin, head, limit.max_rows)
        return _offset(snapshot, snapshot.normalize(end))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_records is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_records)

    def reportLatestOffset(self) -> dict[str, int] | None:
        snapshot = self._snapshot()
        return None if snapshot.end is None else _offset(snapshot, snapshot.end)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._snapshot().head()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        snapshot = self._snapshot()
        stop = _log_offset(end)
        begin = snapshot.check_lost(_log_offset(start), fail=self.options.fail_on_data_loss,
                                    what="actorbroker stream")
        if begin >= stop:
            return []
        ranges = snapshot.ranges(begin, stop, min_ranges=self.options.min_partitions)
        return [SegmentPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the log is read-only to the pipeline."""
