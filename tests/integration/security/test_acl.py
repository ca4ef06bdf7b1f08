"""ACL files on a real broker: SUBSCRIBE refused (the Paho suite's test_subscribe_failure,
3.1.1 0x80, MQTT 5 0x87), PUBLISH refused (MQTT 5 0x87; 3.x acknowledged and dropped),
Wills, retained messages on subscribe, and a reload that revokes existing subscriptions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqtt_testkit import Client
from security_kit import login, publishes_until, write_users

from actorbroker import testing
from actorbroker.actors.storage.requests import StorageStatus
from actorbroker.app import RunningBroker
from actorbroker.codec import (
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    Will,
)

Secure = Callable[..., RunningBroker]


def test_paho_suite_subscribe_failure(tmp_path: Path, secure: Secure) -> None:
    """The paho interoperability suite's test_subscribe_failure: ``test/nosubscribe`` refused with 0x80 (3.1.1)."""
    acl = tmp_path / "acl"
    acl.write_text("topic readwrite #\ntopic deny test/nosubscribe\n")
    broker = secure(acl_file=str(acl))
    paho = Client(broker.host, broker.port, "myclientid", level=4)
    try:
        assert paho.connect().rc == 0
        assert paho.subscribe("test/nosubscribe", 2) == [0x80]
        assert paho.subscribe("TopicA", 2) == [2]
    finally:
        paho.close()
    raw, _ = login(broker.host, broker.port, "v5", level=5)
    try:
        raw.send(Subscribe(1, (Subscription("test/nosubscribe", 1), Subscription("x/#", 1))))
        assert raw.recv() == SubAck(1, (ReasonCode.NOT_AUTHORIZED, 1))
    finally:
        raw.close()


def _publishing_acl(tmp_path: Path) -> Path:
    acl = tmp_path / "acl"
    acl.write_text("topic read in/#\ntopic readwrite out/#\n")
    return acl


def test_publish_refused_v5_with_0x87_and_v3_acked_and_dropped(tmp_path: Path,
                                                               secure: Secure) -> None:
    broker = secure(acl_file=str(_publishing_acl(tmp_path)))
    watcher, _ = login(broker.host, broker.port, "watcher")
    watcher.send(Subscribe(1, (Subscription("in/#", 1), Subscription("out/#", 1))))
    assert watcher.recv() == SubAck(1, (1, 1))
    v5, _ = login(broker.host, broker.port, "v5", level=5)
    v3, _ = login(broker.host, broker.port, "v3")
    try:
        v5.send(Publish("in/a", b"no", 1, packet_id=1), Publish("in/b", b"no", 2, packet_id=2),
                Publish("in/c", b"no", 0))
        assert v5.recv() == PubAck(1, ReasonCode.NOT_AUTHORIZED)
        assert v5.recv() == PubRec(2, ReasonCode.NOT_AUTHORIZED)
        v3.send(Publish("in/d", b"no", 1, packet_id=1), Publish("in/e", b"no", 2, packet_id=2))
        assert v3.recv() == PubAck(1)
        assert v3.recv() == PubRec(2)
        v3.send(PubRel(2))
        assert v3.recv() == PubComp(2)
        v3.send(Publish("out/marker", b"yes", 1, packet_id=3))
        assert v3.recv() == PubAck(3)
        got = publishes_until(watcher, "out/marker")
        assert [p.topic for p in got] == ["out/marker"]  # nothing of in/ got through
    finally:
        for raw in (watcher, v5, v3):
            raw.close()


def test_a_will_the_acl_refuses_is_dropped(tmp_path: Path, secure: Secure) -> None:
    """As Mosquitto 2: the CONNECT is accepted, the Will never published (also into $SYS)."""
    broker = secure(acl_file=str(_publishing_acl(tmp_path)))
    watcher, _ = login(broker.host, broker.port, "watcher")
    watcher.send(Subscribe(1, (Subscription("in/#", 0), Subscription("out/#", 0))))
    assert watcher.recv() == SubAck(1, (0, 0))
    for level, topic in ((4, "in/will3"), (5, "in/will5"), (4, "$SYS/will"), (4, "out/will")):
        raw, ok = login(broker.host, broker.port, f"w{level}", level=level,
                        will=Will(topic, topic.encode(), 0, False))
        assert ok.reason_code == 0
        raw.close()  # no DISCONNECT: the Will is due
    # Every clean session has ended (its Will handled) once only the watcher's is left.
    broker.wait_until(lambda m: m["sessions"] == 1)
    watcher.send(Publish("out/marker", b"m", 0))
    got = publishes_until(watcher, "out/marker")
    assert [p.topic for p in got] == ["out/will", "out/marker"]
    watcher.close()


def _users_and_acl(tmp_path: Path, acl_text: str) -> dict[str, str]:
    users = write_users(tmp_path / "passwd", {"writer": "w", "reader": "r"})
    acl = tmp_path / "acl"
    acl.write_text(acl_text)
    return {"password_file": str(users), "acl_file": str(acl)}


READER_ACL = """\
user writer
topic readwrite #
user reader
topic read a/open
topic read b/#
topic deny b/secret
"""


def test_retained_messages_follow_the_subscription_grants(tmp_path: Path, secure: Secure
                                                          ) -> None:
    broker = secure(**_users_and_acl(tmp_path, READER_ACL))
    writer, ok = login(broker.host, broker.port, "writer", "writer", "w")
    assert ok.reason_code == 0
    for n, topic in enumerate(("a/open", "a/secret", "b/public", "b/secret"), 1):
        writer.send(Publish(topic, topic.encode(), 1, retain=True, packet_id=n))
        assert writer.recv() == PubAck(n)
    reader, ok = login(broker.host, broker.port, "reader", "reader", "r")
    try:
        reader.send(Subscribe(1, (Subscription("a/#", 0), Subscription("b/#", 0),
                                  Subscription("b/+", 0), Subscription("b/secret", 0),
                                  Subscription("b/public", 0), Subscription("a/open", 0))))
        assert reader.recv() == SubAck(1, (0x80, 0x80, 0x80, 0x80, 0, 0))
        retained = sorted(p.topic for p in (reader.recv(), reader.recv()))
        assert retained == ["a/open", "b/public"]
        # Nothing else: the next thing it gets is its own marker's copy.
        writer.send(Publish("a/open", b"marker", 0))
        marker = reader.recv()
        assert isinstance(marker, Publish) and marker.payload == b"marker"
    finally:
        writer.close()
        reader.close()


def test_a_reload_revokes_subscriptions_the_new_acl_refuses(tmp_path: Path, secure: Secure
                                                            ) -> None:
    options = _users_and_acl(tmp_path, READER_ACL)
    broker = secure(**options)
    writer, _ = login(broker.host, broker.port, "writer", "writer", "w")
    reader, _ = login(broker.host, broker.port, "reader", "reader", "r")
    try:
        reader.send(Subscribe(1, (Subscription("b/public", 0), Subscription("a/open", 0))))
        assert reader.recv() == SubAck(1, (0, 0))
        Path(options["acl_file"]).write_text(READER_ACL.replace("topic read b/#\n", ""))
        # A SIGHUP does the same in `actorbroker serve` (test_reload.py).
        broker.call(lambda: broker.broker.reload("test"))
        broker.wait_until(lambda _: "b/public" not in _filters(broker, "reader"))
        writer.send(Publish("b/public", b"revoked", 0), Publish("a/open", b"marker", 0))
        got = publishes_until(reader, "a/open")
        assert [p.payload for p in got] == [b"marker"]
        # The reader may not subscribe again either.
        reader.send(Subscribe(2, (Subscription("b/public", 0),)))
        assert reader.recv() == SubAck(2, (0x80,))
        # Changing the file is enough: the broker polls it every few seconds.
        Path(options["acl_file"]).write_text(READER_ACL.replace("topic read a/open\n", ""))
        broker.wait_until(lambda _: "a/open" not in _filters(broker, "reader"), timeout=15)
    finally:
        writer.close()
        reader.close()


def _filters(broker: RunningBroker, client_id: str) -> dict[str, int]:
    """``client_id``'s subscriptions as the registry holds them."""
    registry = broker.node.names.registry()
    assert registry is not None

    async def ask() -> dict[str, int]:
        filters: dict[str, int] = await registry.proxy().subscriptions_of(client_id)
        return filters
    found: dict[str, int] = broker.run(ask())
    return found


def test_a_reload_revokes_an_offline_sessions_subscription_too(
        tmp_path: Path, start_broker: Callable[..., RunningBroker]) -> None:
    """Kept in memory (no commit log: the session keeps its actor while offline), nothing
    is queued for a subscription the new ACL refuses."""
    options = _users_and_acl(tmp_path, READER_ACL)
    broker = start_broker(testing.broker_config(**options))
    reader, _ = login(broker.host, broker.port, "reader", "reader", "r", clean=False)
    reader.send(Subscribe(1, (Subscription("b/public", 1), Subscription("a/open", 1))))
    assert reader.recv() == SubAck(1, (1, 1))
    reader.disconnect()
    Path(options["acl_file"]).write_text(READER_ACL.replace("topic read b/#\n", ""))
    broker.call(lambda: broker.broker.reload("test"))
    broker.wait_until(lambda _: "b/public" not in _filters(broker, "reader"))
    writer, _ = login(broker.host, broker.port, "writer", "writer", "w")
    writer.send(Publish("b/public", b"revoked", 1, packet_id=1),
                Publish("a/open", b"marker", 1, packet_id=2))
    assert (writer.recv(), writer.recv()) == (PubAck(1), PubAck(2))
    reader, ok = login(broker.host, broker.port, "reader", "reader", "r", clean=False)
    assert ok.session_present
    got = publishes_until(reader, "a/open")
    assert [p.payload for p in got] == [b"marker"]
    reader.close()
    writer.close()


def test_a_hibernated_sessions_queue_is_checked_when_it_comes_back(
        tmp_path: Path, secure: Secure) -> None:
    """With the commit log an offline session hibernates (no actor to tell): what its queue
    took under a subscription the reloaded ACL refuses is dropped when its client is back."""
    options = _users_and_acl(tmp_path, READER_ACL)
    broker = secure(**options)
    reader, _ = login(broker.host, broker.port, "reader", "reader", "r", clean=False)
    reader.send(Subscribe(1, (Subscription("b/public", 1), Subscription("a/open", 1))))
    assert reader.recv() == SubAck(1, (1, 1))
    reader.disconnect()
    broker.wait_until(lambda _: broker.call(
        lambda: broker.node.names.is_asleep("reader")))
    writer, _ = login(broker.host, broker.port, "writer", "writer", "w")
    writer.send(Publish("b/public", b"queued then revoked", 1, packet_id=1))
    assert writer.recv() == PubAck(1)
    Path(options["acl_file"]).write_text(READER_ACL.replace("topic read b/#\n", ""))
    broker.call(lambda: broker.broker.reload("test"))
    writer.send(Publish("a/open", b"marker", 1, packet_id=2))
    assert writer.recv() == PubAck(2)
    broker.wait_until(lambda _: _queued(broker) == 2)
    reader, ok = login(broker.host, broker.port, "reader", "reader", "r", clean=False)
    assert ok.session_present
    got = publishes_until(reader, "a/open")
    assert [p.payload for p in got] == [b"marker"]
    assert broker.metrics()["dropped"] == {"not_authorized": 1}
    reader.close()
    writer.close()


def _queued(broker: RunningBroker) -> int:
    """Messages the commit log holds for offline sessions (the storage actor's figure)."""
    storage = broker.node.names.storage()
    assert storage is not None
    figures: dict[str, Any] = storage.ask(StorageStatus(), timeout=10)
    return int(figures["queued"])
