"""Persistence layer: the commit log, its record format and its retention. Imports the stdlib and actorbroker.errors only.

* :mod:`.records`: the record types and their binary encoding (the module
  the data pipeline imports, with :mod:`.reader`);
* :mod:`.segment`: segment files and CRC'd frames; :mod:`.committed`: the
  side file with the committed offset;
* :mod:`.log`: :class:`CommitLog`, appends with group commit, reads,
  recovery on open (:mod:`.recovery`), disk-full handling;
* :mod:`.retention`: which segments may go;
* :mod:`.reader`: :class:`LogReader`, for other processes.

The on-disk format is described in docs/storage.md; its tables are generated
by ``python -m actorbroker.persistence --write``.
"""

from __future__ import annotations

from .log import DEFAULT_SEGMENT_BYTES, MODES, CommitLog
from .reader import LogEntry, LogReader, SegmentRef
from .recovery import Event, RecoveryEvent, RecoveryReport
from .retention import RetentionPlan, RetentionPolicy, SegmentInfo, plan_retention

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "MODES",
    "CommitLog",
    "Event",
    "LogEntry",
    "LogReader",
    "RecoveryEvent",
    "RecoveryReport",
    "RetentionPlan",
    "RetentionPolicy",
    "SegmentInfo",
    "SegmentRef",
    "plan_retention",
]
