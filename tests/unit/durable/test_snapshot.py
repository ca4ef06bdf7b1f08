"""Signed dill snapshots: loaded only when the HMAC verifies and the version matches; never unpickled otherwise."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import dill
import pytest

from actorbroker.durable import DurableState
from actorbroker.durable.snapshot import (
    KEY_NAME,
    SNAPSHOT_NAME,
    SnapshotKeyError,
    load_key,
    read_snapshot,
    write_snapshot,
)
from actorbroker.durable.image import Flight
from actorbroker.persistence.records import (OutboundSent, OutboundUnsent, SessionConnected,
                                             Subscribed)

VERSION = "actorbroker test, state 1"


class Marker:
    """Unpickling this creates a file: proof that a snapshot was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (self.path, "w"))


def test_the_key_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    key = load_key(tmp_path)
    info = (tmp_path / KEY_NAME).stat()
    assert len(key) == 32 and stat.S_IMODE(info.st_mode) == 0o600
    assert load_key(tmp_path) == key


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    load_key(tmp_path)
    os.chmod(tmp_path / KEY_NAME, 0o644)
    with pytest.raises(SnapshotKeyError, match="0600"):
        load_key(tmp_path)


def test_a_state_comes_back_from_its_snapshot(tmp_path: Path) -> None:
    key = load_key(tmp_path)
    state = DurableState()
    state.apply(0, SessionConnected("s", expiry_interval=60, timestamp_us=1), 50)
    state.apply(50, Subscribed("s", "t/#", 1, timestamp_us=1), 90)
    write_snapshot(tmp_path, key, state, 90, VERSION)
    found = read_snapshot(tmp_path, key, VERSION)
    assert found is not None
    loaded, offset = found
    assert offset == 90 and loaded.sessions["s"].subs == {"t/#": (1, 0)}
    loaded.apply(90, SessionConnected("t", expiry_interval=1, timestamp_us=2), 120)  # handlers back
    assert set(loaded.sessions) == {"s", "t"}


def test_a_flight_never_written_keeps_its_mark_in_the_snapshot(tmp_path: Path) -> None:
    key = load_key(tmp_path)
    state = DurableState()
    state.apply(0, SessionConnected("s", expiry_interval=60, timestamp_us=1), 50)
    state.apply(50, OutboundSent("s", 7, 0, 1, timestamp_us=1), 90)
    state.apply(90, OutboundUnsent("s", 7, timestamp_us=1), 120)
    write_snapshot(tmp_path, key, state, 120, VERSION)
    found = read_snapshot(tmp_path, key, VERSION)
    assert found is not None
    flights = found[0].sessions["s"].inflight
    assert flights is not None and flights[7].unsent


def test_a_snapshot_of_a_flight_from_before_the_mark_unpickles_unmarked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Pickled as a version without ``unsent`` did (five fields), loaded by this one.
    monkeypatch.setattr(Flight, "__getnewargs__", lambda self: tuple(self)[:5])
    data = dill.dumps(Flight(5, 1, False, False, 3, True))
    monkeypatch.undo()
    assert dill.loads(data) == Flight(5, 1, False, False, 3, False)


def test_a_tampered_snapshot_is_never_unpickled(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                ) -> None:
    key = load_key(tmp_path)
    write_snapshot(tmp_path, key, DurableState(), 0, VERSION)
    path = tmp_path / SNAPSHOT_NAME
    data = path.read_bytes()
    marker = tmp_path / "unpickled"
    evil = dill.dumps(Marker(str(marker)))
    head_and_mac = len(data) - len(dill.dumps(DurableState(), protocol=dill.HIGHEST_PROTOCOL))
    path.write_bytes(data[:head_and_mac] + evil)
    assert read_snapshot(tmp_path, key, VERSION) is None
    assert not marker.exists(), "the payload was unpickled before its signature was checked"
    assert "bad signature" in caplog.text
    # The same evil payload, signed with another key: refused the same way.
    write_snapshot(tmp_path, b"k" * 32, Marker(str(marker)), 0, VERSION)
    assert read_snapshot(tmp_path, key, VERSION) is None and not marker.exists()
    # A sanity check of the marker itself: with the right key it *is* unpickled.
    write_snapshot(tmp_path, key, Marker(str(marker)), 0, VERSION)
    read_snapshot(tmp_path, key, VERSION)
    assert marker.exists()


def test_another_version_or_a_cut_file_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                  ) -> None:
    key = load_key(tmp_path)
    write_snapshot(tmp_path, key, DurableState(), 7, "actorbroker 0.0.1, state 1")
    assert read_snapshot(tmp_path, key, VERSION) is None and "written by" in caplog.text
    path = tmp_path / SNAPSHOT_NAME
    path.write_bytes(path.read_bytes()[:20])
    assert read_snapshot(tmp_path, key, VERSION) is None and "cut short" in caplog.text
    path.unlink()
    assert read_snapshot(tmp_path, key, VERSION) is None
