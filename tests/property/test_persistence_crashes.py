"""Hypothesis state machine: the commit log against a list, through reopens and crashes.

A crash is simulated on a copy of the directory (what the disk holds: the
written bytes, not the buffered ones), cut at any offset at or above the
committed one, with garbage after the cut, or with later segments missing,
as pages never written back would leave it. After recovery the log must hold
exactly the records that end at or below the cut: every committed record,
nothing torn, nothing reordered, and no committed offset given out again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actorbroker.persistence import CommitLog, Event
from actorbroker.persistence.records import PublishAccepted
from actorbroker.persistence.segment import HEADER, parse_segment_name, segment_name

SEGMENT = 1024


def record(i: int, size: int) -> PublishAccepted:
    return PublishAccepted(f"m/{i}", bytes([i % 256]) * size, qos=1, timestamp_us=i)


class LogMachine(RuleBasedStateMachine):
    """The model: records in order with their offsets and ends; how many are committed."""

    @initialize()
    def open_log(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="logmachine"))
        self.generation = 0
        self.directory = self.tmp / "log0"
        self.log = CommitLog(self.directory, segment_bytes=SEGMENT)
        self.records: list[PublishAccepted] = []
        self.offsets: list[int] = []
        self.ends: list[int] = []
        self.committed = 0  # records

    def teardown(self) -> None:
        if hasattr(self, "log"):
            self.log.close()
            shutil.rmtree(self.tmp)

    @rule(sizes=st.lists(st.integers(0, 1500), min_size=0, max_size=8))
    def append(self, sizes: list[int]) -> None:
        batch = [record(len(self.records) + k, size) for k, size in enumerate(sizes)]
        offsets = self.log.append(batch)
        assert offsets == sorted(offsets)
        assert not self.offsets or not offsets or offsets[0] == self.ends[-1]
        for rec, offset, nxt in zip(batch, offsets, [*offsets[1:], self.log.next_offset]):
            self.records.append(rec)
            self.offsets.append(offset)
            self.ends.append(nxt)

    @rule()
    def sync(self) -> None:
        assert self.log.sync() == self.log.next_offset
        self.committed = len(self.records)

    @rule()
    def flush(self) -> None:
        self.log.flush()

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = CommitLog(self.directory, segment_bytes=SEGMENT)
        assert self.log.recovery is not None and self.log.recovery.clean
        self.committed = len(self.records)

    @precondition(lambda self: self.records)
    @rule(data=st.data())
    def read_from_a_record(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.records) - 1))
        found = [e.record for e in self.log.read(self.offsets[index])]
        assert found == self.records[index:]
        assert self.log.read_at(self.offsets[index]) == self.records[index]

    @rule(data=st.data(), garbage=st.binary(max_size=300), drop_later=st.booleans())
    def crash(self, data: st.DataObject, garbage: bytes, drop_later: bool) -> None:
        self.generation += 1
        image = self.tmp / f"log{self.generation}"
        shutil.copytree(self.directory, image, ignore=shutil.ignore_patterns("lock"))
        bases = sorted(b for b in map(parse_segment_name, os.listdir(image)) if b is not None)
        on_disk = max((b + (image / segment_name(b)).stat().st_size - HEADER.size for b in bases),
                      default=0)
        committed_offset = self.ends[self.committed - 1] if self.committed else 0
        cut = data.draw(st.integers(committed_offset, max(committed_offset, on_disk)))
        for base in bases:
            path = image / segment_name(base)
            if base > cut or (base == cut and drop_later and base > committed_offset):
                path.unlink()
            elif base + path.stat().st_size - HEADER.size > cut:
                os.truncate(path, HEADER.size + cut - base)
                with path.open("ab") as f:
                    f.write(garbage)
        self.log.close()
        self.directory = image
        self.log = CommitLog(image, segment_bytes=SEGMENT)
        report = self.log.recovery
        assert report is not None
        assert {e.event for e in report.events} <= {Event.TORN_TAIL, Event.REMOVED_EMPTY}
        kept = sum(1 for end in self.ends if end <= cut)
        assert kept >= self.committed
        del self.records[kept:], self.offsets[kept:], self.ends[kept:]
        self.committed = kept
        assert self.log.next_offset == (self.ends[-1] if self.ends else 0)

    @invariant()
    def reads_equal_the_model(self) -> None:
        if hasattr(self, "log"):
            assert [e.record for e in self.log.read()] == self.records


TestLogMachine = LogMachine.TestCase
TestLogMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
