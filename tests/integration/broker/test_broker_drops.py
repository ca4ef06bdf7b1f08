"""Nothing dropped silently (docs/architecture.md): each drop reason produced for real, counted and logged.

Each test makes the broker discard deliveries for one reason through real
clients and checks that the count under that reason (and nothing else) is
exactly what was lost, that the total agrees, and that the rate-limited
WARNING line names the reason. ``queue_full`` under congestion and its
``$SYS`` topic are in test_broker_backpressure.py; ``session_crashed`` of a
connected client in test_broker_supervision.py.

Two reasons need a session actor to be gone at the moment a topic actor
delivers. That moment is made exact, not waited for: on the broker's loop,
in one call, the session is told the test-only ``CrashForTest`` and the
topic actor a publish; the loop runs actor turns in the order they were
scheduled, so the session has crashed (and left the name table) before the
topic actor looks it up.

``topic_unavailable`` (a topic actor that cannot be started) has no way to
happen short of breaking the Topics supervisor, and is not produced here.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mqtt_testkit import Client, RawClient, broker_config

from actorbroker.actors.faults import CrashForTest
from actorbroker.actors.messages import PublishBatch
from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Connect,
    Properties,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
)
from actorbroker.session import AppMessage

sys.path.insert(0, str(Path(__file__).parent))

from census import queued_in_session  # noqa: E402

Start = Callable[..., RunningBroker]


def _start(start_broker: Start, tmp_path: Path, durability: str = "fsync",
           **limits: object) -> RunningBroker:
    config = broker_config(tmp_path, **limits)
    config = dataclasses.replace(config, storage=dataclasses.replace(
        config.storage, durability=durability))
    # topic_hot_window 0: every topic gets its actor at once (some tests crash them).
    return start_broker(config, sys_interval=0, fault_injection=True, topic_hot_window=0)


def _assert_dropped(running: RunningBroker, caplog: pytest.LogCaptureFixture, reason: str,
                    count: int) -> None:
    """Exactly ``count`` drops, all under ``reason``, and a WARNING line saying so."""
    metrics = running.wait_until(lambda m: m["dropped"].get(reason, 0) >= count)
    assert metrics["dropped"] == {reason: count}, metrics["dropped"]
    assert metrics["dropped_total"] == count
    lines = [r.getMessage() for r in caplog.records
             if r.name == "actorbroker.drops" and r.levelno == logging.WARNING]
    assert any(f"({reason})" in line for line in lines), lines


def _v5(running: RunningBroker, client_id: str, *, clean: bool = True,
        **properties: Any) -> RawClient:
    client = RawClient(running.host, running.port, level=5)
    client.send(Connect("MQTT", 5, client_id, clean, 60, properties=Properties(**properties)))
    connack = client.recv()
    assert isinstance(connack, ConnAck) and connack.reason_code == 0, connack
    return client


def _subscribe(client: RawClient, topic_filter: str, qos: int) -> None:
    client.send(Subscribe(1, (Subscription(topic_filter, qos),)))
    assert isinstance(client.recv(), SubAck)


@pytest.fixture(autouse=True)
def _drop_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="actorbroker.drops")


@pytest.mark.parametrize("durability", ["fsync", "memory"])
def test_queue_full(start_broker: Start, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                    durability: str) -> None:
    if durability == "memory":  # the queue in memory: a message count
        running = _start(start_broker, tmp_path, durability, max_queued_messages=2)
    else:  # log offsets: payload bytes (two of these one-byte messages)
        config = broker_config(tmp_path)
        config = dataclasses.replace(config, storage=dataclasses.replace(
            config.storage, durable_queue_bytes=2))
        running = start_broker(config, sys_interval=0)
    sub = Client(running.host, running.port, "qf-sub", clean=False)
    pub = Client(running.host, running.port, "qf-pub")
    back = Client(running.host, running.port, "qf-sub", clean=False)
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("qf/t", 1)
        sub.disconnect()
        for i in range(5):
            pub.publish("qf/t", str(i).encode(), qos=1)
        _assert_dropped(running, caplog, "queue_full", 3)
        assert back.connect().session_present
        assert [m.payload for m in back.expect_many(2)] == [b"0", b"1"]  # the queue was kept
    finally:
        for c in (sub, pub, back):
            c.close()


def test_offline_qos0(client: Callable[..., Client], broker: RunningBroker,
                      caplog: pytest.LogCaptureFixture) -> None:
    sub = client("oq-sub", clean=False)
    sub.subscribe("oq/t", 2)
    sub.disconnect()
    pub = client("oq-pub")
    for qos in (0, 0, 1):
        pub.publish("oq/t", f"q{qos}".encode(), qos=qos)
    _assert_dropped(broker, caplog, "offline_qos0", 2)


def test_session_ended(client: Callable[..., Client], broker: RunningBroker,
                       caplog: pytest.LogCaptureFixture) -> None:
    sub = client("se-sub", clean=False)
    sub.subscribe("se/t", 1)
    sub.disconnect()
    pub = client("se-pub")
    for i in range(3):
        pub.publish("se/t", str(i).encode(), qos=1)
    client("se-sub", clean=True)  # [MQTT-3.1.2-6]: the queued three go with the old session
    _assert_dropped(broker, caplog, "session_ended", 3)


def test_retained_limit(start_broker: Start, tmp_path: Path,
                        caplog: pytest.LogCaptureFixture) -> None:
    config = broker_config(tmp_path)
    config = dataclasses.replace(config, retained=dataclasses.replace(
        config.retained, max_retained_messages=1))
    running = start_broker(config, sys_interval=0)
    sub = Client(running.host, running.port, "rl-sub")
    pub = Client(running.host, running.port, "rl-pub")
    late = Client(running.host, running.port, "rl-late")
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("rl/#", 1)
        pub.publish("rl/a", b"kept", qos=1, retain=True)
        pub.publish("rl/b", b"not kept", qos=1, retain=True)
        assert [m.payload for m in sub.expect_many(2)] == [b"kept", b"not kept"]  # delivered
        _assert_dropped(running, caplog, "retained_limit", 1)
        assert late.connect().rc == 0
        late.subscribe("rl/#", 1)
        assert late.expect().payload == b"kept"
        pub.publish("rl/a", b"marker", qos=1)
        assert late.expect().payload == b"marker"  # and no retained rl/b before it
    finally:
        for c in (sub, pub, late):
            c.close()


def _crash_then_publish(running: RunningBroker, client_id: str, topic: str) -> None:
    """In one loop callback: crash the session of ``client_id``, publish to ``topic``'s actor."""
    names = running.node.names

    def act() -> None:
        names.sessions[client_id].tell(CrashForTest())
        message = AppMessage(topic, b"lost", 0, publisher="test")
        names.topics[topic].tell(PublishBatch((message,)))
    running.call(act)


def test_session_unavailable(start_broker: Start, tmp_path: Path,
                             caplog: pytest.LogCaptureFixture) -> None:
    running = _start(start_broker, tmp_path)
    sub = Client(running.host, running.port, "su-sub")
    pub = Client(running.host, running.port, "su-pub")
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("su/t", 0)
        pub.publish("su/t", b"first", qos=1)  # the topic actor now exists
        assert sub.expect().payload == b"first"
        _crash_then_publish(running, "su-sub", "su/t")
        _assert_dropped(running, caplog, "session_unavailable", 1)
    finally:
        sub.close()
        pub.close()


def test_session_crashed(start_broker: Start, tmp_path: Path,
                         caplog: pytest.LogCaptureFixture) -> None:
    running = _start(start_broker, tmp_path, durability="memory")
    sub = Client(running.host, running.port, "sc-sub", clean=False)
    pub = Client(running.host, running.port, "sc-pub")
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("sc/t", 1)
        sub.disconnect()
        pub.publish("sc/t", b"held by the actor", qos=1)
        queued_in_session(running, "sc-sub", 1)
        names = running.node.names
        running.call(lambda: names.sessions["sc-sub"].tell(CrashForTest()))
        _assert_dropped(running, caplog, "session_crashed", 1)
    finally:
        sub.close()
        pub.close()


def test_expired(start_broker: Start, tmp_path: Path,
                 caplog: pytest.LogCaptureFixture) -> None:
    running = _start(start_broker, tmp_path)
    sub = _v5(running, "ex-sub", clean=False, session_expiry_interval=60)
    _subscribe(sub, "ex/t", 1)
    sub.disconnect()
    pub = _v5(running, "ex-pub")
    pub.send(Publish("ex/t", b"short-lived", 1, packet_id=1,
                     properties=Properties(message_expiry_interval=1)))
    pub.recv()  # PUBACK
    threading.Event().wait(1.2)  # the subject of the test: the expiry interval runs out
    back = _v5(running, "ex-sub", clean=False, session_expiry_interval=60)
    try:
        _assert_dropped(running, caplog, "expired", 1)
    finally:
        back.close()
        pub.close()


def test_too_large(start_broker: Start, tmp_path: Path,
                   caplog: pytest.LogCaptureFixture) -> None:
    running = _start(start_broker, tmp_path)
    sub = _v5(running, "tl-sub", maximum_packet_size=64)
    pub = _v5(running, "tl-pub")
    try:
        _subscribe(sub, "tl/t", 0)
        pub.send(Publish("tl/t", b"x" * 200), Publish("tl/t", b"small"))
        assert sub.recv() == Publish("tl/t", b"small")  # [MQTT-3.1.2-25]: the big one is not sent
        _assert_dropped(running, caplog, "too_large", 1)
    finally:
        sub.close()
        pub.close()


def test_shared_unavailable(start_broker: Start, tmp_path: Path,
                            caplog: pytest.LogCaptureFixture) -> None:
    running = _start(start_broker, tmp_path)
    member = _v5(running, "sh-member")
    pub = _v5(running, "sh-pub")
    try:
        _subscribe(member, "$share/g/sh/t", 0)
        pub.send(Publish("sh/t", b"first"))
        assert member.recv() == Publish("sh/t", b"first")  # the topic actor now exists
        _crash_then_publish(running, "sh-member", "sh/t")
        _assert_dropped(running, caplog, "shared_unavailable", 1)
    finally:
        member.close()
        pub.close()
