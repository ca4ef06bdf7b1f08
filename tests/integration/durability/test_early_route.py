"""QoS 1 routed once its record is written, before the fsync; only the PUBACK waits for the sync.

A real broker (durability fsync, the default) on real sockets. A slow and a
failing fsync cannot be had for real here (no device-mapper, no FUSE
library), so two tests inject them: **fault injection** of the commit log's
``os.fdatasync`` on the broker's segment files (``*.log`` under this test's
data directory; every other file and every other call is untouched). The
injected sync *blocks until the test lets it go* (so "slow" is as slow as the
test needs, with no sleep) or *fails with EIO*, and the commit log runs its
real failure path (rollback, ``NotDurable``, probing, recovery) behind it.
The load test uses the real fdatasync.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from durability_kit import connect5, durable_config, raw, running, status
from mqtt_testkit import RawClient

from actorbroker.codec import PubAck, PubComp, Publish, PubRec, PubRel, ReasonCode, Subscribe
from actorbroker.codec import Subscription
from actorbroker.persistence import LogReader
from actorbroker.persistence.records import (OutboundSent, PublishAccepted, SessionDropped, SessionQueued,
                                             UnknownRecord)

_real_fdatasync = os.fdatasync


class SyncGate:
    """The fault injected into ``os.fdatasync`` for the segment files under ``root``.

    ``with gate.held():`` syncs block (``entered`` is set when one does) until the end of
    the block. ``fail_next(n)``: the next ``n`` syncs fail with EIO.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self._open = threading.Event()
        self._open.set()
        self.entered = threading.Event()
        self._fail = 0
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if path.startswith(self.root) and path.endswith(".log"):
            self.entered.set()
            if not self._open.wait(timeout=60):
                raise OSError(errno.EIO, "injected: the test never let the sync go")
            with self._lock:
                if self._fail:
                    self._fail -= 1
                    raise OSError(errno.EIO, "injected fdatasync failure")
        _real_fdatasync(fd)

    @contextmanager
    def held(self) -> Iterator[None]:
        self.entered.clear()
        self._open.clear()
        try:
            yield
        finally:
            self._open.set()  # a failed test must not leave the storage actor blocked

    def fail_next(self, count: int = 1) -> None:
        with self._lock:
            self._fail = count


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SyncGate]:
    injected = SyncGate(tmp_path / "data")
    monkeypatch.setattr(os, "fdatasync", injected)
    yield injected


def quiet(broker: Any) -> None:
    """Return once the storage actor handled everything told to it so far (an ask queues
    behind the Appends, and a batch never takes an ask)."""
    status(broker)


def subscriber(broker: Any, client_id: str, topic_filter: str, qos: int, *,
               clean: bool = True) -> Any:
    client = raw(broker)
    client.connect(client_id, clean=clean)
    client.send(Subscribe(1, (Subscription(topic_filter, qos),)))
    client.recv()  # SUBACK
    return client


def sub_and_pub(broker: Any, name: str, qos: int = 1) -> tuple[Any, Any]:
    """A subscriber to ``name/#`` at ``qos`` and an MQTT 5 publisher, both connected."""
    sub = subscriber(broker, f"{name}-sub", f"{name}/#", qos)
    pub = raw(broker, level=5)
    connect5(pub, f"{name}-pub")
    return sub, pub


def resume(broker: Any, pub5: Any) -> None:
    """Publish QoS 1 until it is accepted again (the storage actor probes with backoff)."""
    for n in range(2, 2000):
        pub5.send(Publish("fail/5", b"again", 1, False, False, n))
        answer = pub5.recv(timeout=15)
        assert isinstance(answer, PubAck)
        if answer.reason_code == 0:
            assert status(broker)["failure"] is None
            return
    raise AssertionError("service never resumed")


def records_naming_messages(entries: list[Any]) -> list[Any]:
    """The records that name a message by its offset, each checked to name a ``PublishAccepted``
    that is in the log (none names an offset a failed sync gave out)."""
    publishes = {e.offset for e in entries if isinstance(e.record, PublishAccepted)}
    named = [e.record for e in entries
             if isinstance(e.record, (OutboundSent, SessionQueued, SessionDropped))]
    assert all(r.offset in publishes for r in named), named
    return named


def drain(client: Any, payload: bytes) -> bytes:
    """Acknowledge what ``client`` receives up to the first message with ``payload``."""
    while True:
        packet = client.recv()
        assert isinstance(packet, Publish), packet
        client.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
        if packet.payload == payload:
            return packet.payload


def test_a_qos1_message_reaches_the_subscriber_before_the_puback_while_the_sync_is_slow(
        tmp_path: Path, gate: SyncGate) -> None:
    with running(durable_config(tmp_path / "data")) as broker:
        sub, pub = sub_and_pub(broker, "early")
        quiet(broker)
        with gate.held():
            pub.send(Publish("early/t", b"one", 1, False, False, 1))
            got = sub.recv()  # while the sync of its record is held
            assert isinstance(got, Publish) and got.payload == b"one"
            assert gate.entered.wait(10), "the record's sync never started"
            with pytest.raises(TimeoutError):
                pub.recv(timeout=0.3)  # no PUBACK while the record is not on disk
        ack = pub.recv()
        assert isinstance(ack, PubAck) and ack.packet_id == 1 and ack.reason_code == 0
        sub.send(PubAck(got.packet_id))  # type: ignore[arg-type]
        # The next one is the same, and the log has both, in order.
        pub.send(Publish("early/t", b"two", 1, False, False, 2))
        assert sub.recv().payload == b"two"  # type: ignore[attr-defined]
        assert isinstance(pub.recv(), PubAck)
    payloads = [e.record.payload for e in LogReader(tmp_path / "data" / "log").read()
                if isinstance(e.record, PublishAccepted)]
    assert payloads == [b"one", b"two"]


def test_a_message_routed_early_back_to_its_publisher_comes_after_its_puback(
        tmp_path: Path, gate: SyncGate) -> None:
    """No packet overtakes a pending PUBACK: the publisher's own subscription gets the
    message (routed early) only after the PUBACK, which waits for the sync."""
    with running(durable_config(tmp_path / "data")) as broker:
        other = subscriber(broker, "self-other", "self/#", 1)
        pub = subscriber(broker, "self-pub", "self/#", 1)
        quiet(broker)
        with gate.held():
            pub.send(Publish("self/t", b"mine", 1, False, False, 7))
            got = other.recv()  # routed while the sync is held
            assert isinstance(got, Publish) and got.payload == b"mine"
            assert gate.entered.wait(10), "the record's sync never started"
            with pytest.raises(TimeoutError):
                pub.recv(timeout=0.3)  # neither its PUBACK nor its own copy yet
        first, second = pub.recv(), pub.recv()
        assert isinstance(first, PubAck) and first.packet_id == 7, first
        assert isinstance(second, Publish) and second.payload == b"mine", second


def test_qos2_is_not_routed_before_its_sync_nor_a_qos1_behind_it(tmp_path: Path,
                                                                  gate: SyncGate) -> None:
    with running(durable_config(tmp_path / "data")) as broker:
        sub, pub = sub_and_pub(broker, "q2", 2)
        other = raw(broker)
        other.connect("q2-marker")
        quiet(broker)
        with gate.held():
            pub.send(Publish("q2/t", b"exactly once", 2, False, False, 1))
            pub.send(Publish("q2/t", b"qos 1 behind it", 1, False, False, 2))
            assert gate.entered.wait(10), "the record's sync never started"
            other.send(Publish("q2/t", b"marker", 0))  # QoS 0 of another client: not held
            first = sub.recv()
            assert isinstance(first, Publish) and first.payload == b"marker", \
                f"{first!r} was routed before its record was synced"
            with pytest.raises(TimeoutError):
                pub.recv(timeout=0.3)  # no PUBREC either
        second, third = sub.recv(), sub.recv()
        assert isinstance(second, Publish) and second.payload == b"exactly once"
        assert isinstance(third, Publish) and third.payload == b"qos 1 behind it"
        answers = [pub.recv(), pub.recv()]
        assert [type(a) for a in answers] == [PubRec, PubAck], answers
        pub.send(PubRel(1))
        assert isinstance(pub.recv(), PubComp)


MESSAGES = 1500
WINDOW = 20  # the broker's Receive Maximum


def test_order_is_kept_across_many_qos1_publishes_under_load(tmp_path: Path) -> None:
    """Four publishers, QoS 1 with a few QoS 2 among them, each with 20 in flight, real fsync:
    every message arrives once, each publisher's in order per QoS."""
    config = durable_config(tmp_path / "data", limits=dict(max_queued_messages=0))
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("load-sub")
        sub.send(Subscribe(1, (Subscription("load/#", 2),)))
        sub.recv()
        errors: list[str] = []

        def publish(n: int) -> None:
            try:
                pub = RawClient(broker.host, broker.port, 5 if n % 2 else 4, timeout=30)
                if n % 2:
                    connect5(pub, f"load-pub{n}")
                else:
                    pub.connect(f"load-pub{n}")
                sent = acked = 0
                while acked < MESSAGES:
                    while sent < MESSAGES and sent - acked < WINDOW:
                        qos = 2 if sent % 50 == 49 else 1
                        pub.send(Publish(f"load/{n}", b"%d:%06d" % (n, sent), qos, False,
                                         False, sent % 60000 + 1))
                        sent += 1
                    answer = pub.recv()
                    if isinstance(answer, PubRec):
                        pub.send(PubRel(answer.packet_id))
                    elif isinstance(answer, PubAck):
                        assert answer.reason_code == 0, answer
                        acked += 1
                    elif isinstance(answer, PubComp):
                        acked += 1
                pub.disconnect()
            except Exception as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(f"publisher {n}: {exc!r}")

        threads = [threading.Thread(target=publish, args=(n,), daemon=True) for n in range(4)]
        for thread in threads:
            thread.start()
        got: dict[tuple[int, int], list[int]] = {}
        deadline = time.monotonic() + 120
        total = 0
        while total < 4 * MESSAGES and time.monotonic() < deadline and not errors:
            packet = sub.recv(timeout=30)
            if isinstance(packet, PubRel):
                sub.send(PubComp(packet.packet_id))
                continue
            assert isinstance(packet, Publish), packet
            if packet.qos == 1:
                sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
            elif packet.qos == 2:
                sub.send(PubRec(packet.packet_id))  # type: ignore[arg-type]
            n, seq = (int(x) for x in packet.payload.split(b":"))
            got.setdefault((n, packet.qos), []).append(seq)
            total += 1
        for thread in threads:
            thread.join(30)
        assert not errors, errors
        for n in range(4):
            for qos in (1, 2):
                seqs = got.get((n, qos), [])
                expected = [s for s in range(MESSAGES) if (2 if s % 50 == 49 else 1) == qos]
                assert seqs == expected, (
                    f"publisher {n} QoS {qos}: {len(seqs)} of {len(expected)} received, first "
                    f"out of place at {next((i for i, (a, b) in enumerate(zip(seqs, expected)) if a != b), None)}")
        assert status(broker)["failure"] is None


def test_a_sync_that_fails_after_an_early_route_refuses_the_puback_and_fences_the_offset(
        tmp_path: Path, gate: SyncGate) -> None:
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        live = subscriber(broker, "fail-live", "fail/#", 1)
        durable = subscriber(broker, "fail-durable", "fail/5", 1, clean=False)
        pub5 = raw(broker, level=5)
        connect5(pub5, "fail-pub5")
        pub3 = raw(broker)
        pub3.connect("fail-pub3")
        # MQTT 3.1.1 has no negative PUBACK: no acknowledgement, the connection closes.
        quiet(broker)
        gate.fail_next()
        pub3.send(Publish("fail/3", b"refused too", 1, False, False, 1))
        with pytest.raises(EOFError):
            pub3.recv()
        assert drain(live, b"refused too") == b"refused too"  # routed before the sync failed
        resume(broker, pub5)  # the storage actor probes; the client sends it again
        assert drain(live, b"again") == b"again"
        assert durable.recv().payload == b"again"  # type: ignore[attr-defined]  # (not acked)
        # MQTT 5: PUBACK with the reason code; a durable subscriber got it too.
        quiet(broker)
        gate.fail_next()
        pub5.send(Publish("fail/5", b"routed, then not stored", 1, False, False, 1))
        answer = pub5.recv()
        assert isinstance(answer, PubAck) and answer.packet_id == 1, answer
        assert answer.reason_code == ReasonCode.UNSPECIFIED_ERROR, answer
        assert "not stored" in (answer.properties.reason_string or "")
        assert drain(live, b"routed, then not stored") == b"routed, then not stored"
        held = durable.recv()
        assert isinstance(held, Publish) and held.payload == b"routed, then not stored"
        resume(broker, pub5)
        assert broker.node.names.storage().is_alive()
        held_id = held.packet_id
        durable.send(PubAck(held_id))  # type: ignore[arg-type]
        durable.disconnect()
    # The lost offsets were fenced off: no record names a message that is not in the log.
    entries = list(LogReader(data / "log", skip_unknown=False).read())
    fillers = [e for e in entries if isinstance(e.record, UnknownRecord)]
    named = records_naming_messages(entries)
    # Its delivery to the durable subscriber (packet id not reused: nothing was acked before)
    # is not journaled against whatever record got the offset later.
    sent = [r for r in named if isinstance(r, OutboundSent) and r.client_id == "fail-durable"]
    assert sent, "the durable subscriber journaled nothing"
    assert not [r for r in sent if r.packet_id == held_id], sent
    payloads = [e.record.payload for e in entries if isinstance(e.record, PublishAccepted)]
    assert b"routed, then not stored" not in payloads and b"refused too" not in payloads
    assert fillers, "no filler record covers the offsets of the failed batch"


def test_a_message_published_while_a_sync_is_slow_is_routed_before_that_sync_ends(
        tmp_path: Path, gate: SyncGate) -> None:
    """The sync runs on its own thread: a slow disk does not hold up what comes next."""
    with running(durable_config(tmp_path / "data")) as broker:
        sub, pub = sub_and_pub(broker, "pipe")
        quiet(broker)
        with gate.held():
            pub.send(Publish("pipe/t", b"one", 1, False, False, 1))
            assert gate.entered.wait(10), "the first record's sync never started"
            assert sub.recv().payload == b"one"  # type: ignore[attr-defined]
            # Written and routed while the first sync is still blocked in the disk.
            pub.send(Publish("pipe/t", b"two", 1, False, False, 2))
            assert sub.recv().payload == b"two"  # type: ignore[attr-defined]
        acks = [pub.recv(), pub.recv()]
        assert [(a.packet_id, a.reason_code) for a in acks] == [(1, 0), (2, 0)], acks
        assert status(broker)["failure"] is None
    payloads = [e.record.payload for e in LogReader(tmp_path / "data" / "log").read()
                if isinstance(e.record, PublishAccepted)]
    assert payloads == [b"one", b"two"]


def test_a_failed_sync_refuses_what_was_written_behind_it_too(
        tmp_path: Path, gate: SyncGate) -> None:
    """The log rolls back to its last sync: batches written while the failed one ran are
    refused as well, and their offsets, routed early, are fenced off."""
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        sub, pub = sub_and_pub(broker, "pipefail")
        quiet(broker)
        gate.fail_next()
        with gate.held():
            pub.send(Publish("pipefail/t", b"first", 1, False, False, 1))
            assert gate.entered.wait(10), "the first record's sync never started"
            assert drain(sub, b"first") == b"first"
            pub.send(Publish("pipefail/t", b"behind", 1, False, False, 2))
            assert drain(sub, b"behind") == b"behind"  # written, routed, not synced
        acks = [pub.recv(), pub.recv()]
        assert [(a.packet_id, a.reason_code) for a in acks] == [  # type: ignore[attr-defined]
            (1, ReasonCode.UNSPECIFIED_ERROR), (2, ReasonCode.UNSPECIFIED_ERROR)], acks
        resume(broker, pub)  # publishes b"again" until it is stored
    entries = list(LogReader(data / "log", skip_unknown=False).read())
    payloads = [e.record.payload for e in entries if isinstance(e.record, PublishAccepted)]
    assert b"first" not in payloads and b"behind" not in payloads and b"again" in payloads
    records_naming_messages(entries)
    assert [e for e in entries if isinstance(e.record, UnknownRecord)], "offsets not fenced off"
