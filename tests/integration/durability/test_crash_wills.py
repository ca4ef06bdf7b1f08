"""kill -9 and Wills: the connections a crash cuts get their Wills published by the restarted broker, once.

A real ``actorbroker serve`` (durability fsync) is killed with SIGKILL while
clients with Wills are connected. Their clients sent no DISCONNECT, so
their Wills are due ([MQTT-3.1.2-8]): the restarted broker publishes them,

* at once for MQTT 3 and clean sessions (MQTT 3 clean, MQTT 5 without
  Session Expiry: the session ends with the connection, a QoS 0 retained
  Will included);
* for MQTT 5 persistent sessions after the Will Delay Interval, counted
  from the restart, never later than the session's expiry;
* never when the client resumed its session before that ([MQTT-3.1.3-9]),
  at once when it reconnected with Clean Start (the session ended);
* never for a client that had sent DISCONNECT before the crash.

Then the broker is killed again and restarted: no Will is published a
second time (each has exactly one ``WillSent`` in the log, and the third
start publishes none). A durable subscriber (offline over the crash) gets
the QoS 1 Wills from its queue or live.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_broker import BrokerProcess, committed_records, free_port, wait_for_records
from durability_kit import RawClient

from actorbroker.codec import (
    ConnAck,
    Connect,
    Properties,
    PubAck,
    Publish,
    Subscribe,
    Subscription,
    Will,
)
from actorbroker.persistence.records import Record, SessionDisconnected, WillSent, WillSet

FOREVER = 3600


def client(port: int, client_id: str, level: int, *, clean: bool, expiry: int | None = None,
           will: tuple[int, bool, int] | None = None) -> RawClient:
    """Connected; ``will``: (QoS, retain, MQTT 5 Will Delay Interval) of a Will on will/{id}."""
    raw = RawClient("127.0.0.1", port, level)
    props = (Properties(session_expiry_interval=expiry) if expiry is not None
             else Properties()) if level == 5 else Properties()
    the_will = None
    if will is not None:
        qos, retain, delay = will
        will_props = Properties(will_delay_interval=delay) if level == 5 and delay else Properties()
        the_will = Will(f"will/{client_id}", client_id.encode(), qos, retain, will_props)
    raw.send(Connect("MQTT", level, client_id, clean, 0, will=the_will, properties=props))
    connack = raw.recv()
    assert isinstance(connack, ConnAck) and connack.reason_code == 0, connack
    return raw


Seen = dict[str, tuple[float, bytes]]


def receive_until(sub: RawClient, done: Callable[[Seen], bool], seen: Seen,
                  timeout: float = 15.0) -> None:
    """Read (and acknowledge) PUBLISHes until ``done(seen)``; ``seen``: topic -> (arrival
    time, payload) of its first non-DUP copy (a DUP is a resent flight, not a new publish)."""
    deadline = time.monotonic() + timeout
    while not done(seen):
        left = deadline - time.monotonic()
        assert left > 0, f"only {sorted(seen)} arrived"
        packet = sub.recv(left)
        if isinstance(packet, Publish):
            if packet.qos:
                assert packet.packet_id is not None
                sub.send(PubAck(packet.packet_id))
            if not packet.dup:
                assert packet.topic not in seen, f"{packet.topic} published twice"
                seen[packet.topic] = (time.time(), packet.payload)


def sent_wills(records: list[Record]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        if isinstance(record, WillSent):
            counts[record.client_id] = counts.get(record.client_id, 0) + 1
    return counts


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_wills_of_connections_cut_by_kill_9_are_published_after_the_restart_once(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, free_port(), tmp_path / "broker.log")
    port = broker.port
    try:
        broker.start()
        watch = client(port, "watch", 4, clean=False)
        watch.send(Subscribe(1, (Subscription("will/#", 1),)))
        watch.recv()  # SUBACK
        watch.disconnect()
        # Clean sessions' records are stored without holding CONNACK: wait until they are.
        keep = [client(port, "c3", 4, clean=True, will=(0, True, 0)),
                client(port, "c5", 5, clean=True, will=(1, False, 30))]
        wait_for_records(data, lambda rs: {r.client_id for r in rs if isinstance(r, WillSet)}
                         >= {"c3", "c5"})
        keep += [client(port, "d3", 4, clean=False, will=(1, False, 0)),
                 client(port, "d5", 5, clean=True, expiry=FOREVER, will=(1, False, 3)),
                 client(port, "short5", 5, clean=True, expiry=2, will=(1, False, 60)),
                 client(port, "back5", 5, clean=True, expiry=FOREVER, will=(1, False, 4)),
                 client(port, "late5", 5, clean=True, expiry=FOREVER, will=(1, False, 5)),
                 client(port, "gone5", 5, clean=True, expiry=FOREVER, will=(1, False, 60))]
        bye = client(port, "bye", 4, clean=False, will=(1, False, 0))
        bye.disconnect()
        # Its SessionDisconnected is stored with the WillCleared that says "no Will due".
        wait_for_records(data, lambda rs: any(isinstance(r, SessionDisconnected)
                                              and r.client_id == "bye" for r in rs))
        assert sent_wills(committed_records(data)) == {}
        broker.kill()
        for raw in keep:
            raw.close()

        began = time.time()
        broker.start()
        back = client(port, "back5", 5, clean=False, expiry=FOREVER)  # resumed in time
        gone = client(port, "gone5", 5, clean=True, expiry=FOREVER)  # the old session ended
        watch = client(port, "watch", 4, clean=False)
        seen: Seen = {}
        wanted = {f"will/{c}" for c in ("d3", "c5", "gone5", "short5", "d5", "late5")}
        receive_until(watch, lambda s: wanted <= set(s), seen)
        # late5's Will (due at 5 s) came; back5's (4 s) would have been routed before it.
        pub = client(port, "pub", 4, clean=True)
        pub.send(Publish("will/back5", b"marker", 1, False, False, 1),
                 Publish("will/bye", b"marker", 1, False, False, 2))
        assert [pub.recv(), pub.recv()] == [PubAck(1), PubAck(2)]
        receive_until(watch, lambda s: {"will/back5", "will/bye"} <= set(s), seen)
        late = client(port, "late", 4, clean=True)
        late.send(Subscribe(1, (Subscription("will/c3", 0),)))
        late.recv()  # SUBACK
        retained = late.recv()
        assert isinstance(retained, Publish) and (retained.payload, retained.retain) == (
            b"c3", True), "the QoS 0 retained Will of the clean MQTT 3 session"
        wait_for_records(data, lambda rs: sent_wills(rs).keys() >= {"c3"} | {
            t.split("/")[1] for t in wanted})
        for raw in (back, gone, watch, pub, late):
            raw.close()
        broker.kill()
        broker.start()
        watch = client(port, "watch", 4, clean=False)
        pub = client(port, "pub", 4, clean=True)
        pub.send(Publish("will/d3", b"marker", 1, False, False, 1))
        assert pub.recv() == PubAck(1)
        again: Seen = {}
        receive_until(watch, lambda s: "will/d3" in s, again)
        watch.close()
        pub.close()
    finally:
        broker.stop()
    log = (tmp_path / "broker.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    after = {topic: round(at - began, 1) for topic, (at, _) in seen.items()}
    assert set(after) == wanted | {"will/back5", "will/bye"}, after
    assert {t: p for t, (_, p) in seen.items()} == {
        **{t: t.split("/")[1].encode() for t in wanted},
        "will/back5": b"marker", "will/bye": b"marker"}, "no Will of back5 nor bye"
    assert after["will/short5"] >= 2.0, f"due at the session's end (2 s): {after}"
    assert after["will/d5"] >= 3.0, f"due after its Will Delay Interval (3 s): {after}"
    assert after["will/late5"] >= 5.0, after
    assert {t: p for t, (_, p) in again.items()} == {"will/d3": b"marker"}, (
        f"published again after a crash: {again}")
    assert sent_wills(committed_records(data)) == {c: 1 for c in (
        "c3", "c5", "d3", "d5", "short5", "late5", "gone5")}, "one WillSent each, none for " \
        "back5 (resumed in time) nor bye (DISCONNECT)"
    third = log[log.rindex("--- start 3"):]
    assert "publishing its Will" not in third, third
