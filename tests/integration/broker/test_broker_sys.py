"""$SYS topics: Mosquitto's names, retained, updated every interval, only what changed."""

from __future__ import annotations

from collections.abc import Callable

from mqtt_testkit import Client

from actorbroker import __version__
from actorbroker.app import RunningBroker

SYS = "$SYS/broker/"


def _collect(client: Client, wanted: Callable[[dict[str, bytes]], bool],
             seen: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Read $SYS messages until ``wanted(latest values)`` holds (TimeoutError otherwise)."""
    values = seen if seen is not None else {}
    while not wanted(values):
        message = client.expect(timeout=5)
        values[message.topic] = message.payload
    return values


def test_sys_topics_are_retained_and_follow_the_broker(
        start_broker: Callable[..., RunningBroker]) -> None:
    running = start_broker(sys_interval=0.2)
    watcher = Client(running.host, running.port, "sys-watch")
    other = Client(running.host, running.port, "sys-other")
    try:
        assert watcher.connect().rc == 0
        watcher.subscribe("$SYS/#", 0)
        names = [SYS + name for name in (
            "version", "uptime", "clients/connected", "clients/total", "clients/maximum",
            "clients/disconnected", "messages/received", "messages/sent", "messages/dropped",
            "publish/messages/received", "publish/messages/sent", "publish/messages/dropped",
            "bytes/received", "bytes/sent", "subscriptions/count", "retained messages/count",
            "load/messages/received/1min", "load/bytes/sent/15min",
            "load/publish/received/5min", "load/connections/1min", "load/sockets/15min")]
        values = _collect(watcher, lambda v: all(name in v for name in names))
        assert values[SYS + "version"] == f"actorbroker {__version__}".encode()
        assert values[SYS + "uptime"].endswith(b" seconds")
        _collect(watcher, lambda v: v.get(SYS + "subscriptions/count") == b"1", values)
        assert other.connect().rc == 0
        other.subscribe("some/thing", 0)
        _collect(watcher, lambda v: v.get(SYS + "clients/connected") == b"2"
                 and v.get(SYS + "subscriptions/count") == b"2", values)
        # The clients' retained messages only, not the $SYS topics themselves.
        assert values[SYS + "retained messages/count"] == b"0"
        other.publish("kept/x", b"r", qos=1, retain=True)
        _collect(watcher, lambda v: v.get(SYS + "retained messages/count") == b"1", values)
        other.publish("kept/x", b"", qos=1, retain=True)
        _collect(watcher, lambda v: v.get(SYS + "retained messages/count") == b"0", values)
    finally:
        watcher.close()
        other.close()


def test_drops_appear_per_reason(start_broker: Callable[..., RunningBroker]) -> None:
    running = start_broker(sys_interval=0.2)
    offline = Client(running.host, running.port, "sys-offline", clean=False)
    pub = Client(running.host, running.port, "sys-pub")
    watcher = Client(running.host, running.port, "sys-drops")
    try:
        assert offline.connect().rc == 0
        offline.subscribe("drop/me", 0)
        offline.disconnect()
        assert pub.connect().rc == 0
        pub.publish("drop/me", b"lost", qos=0)  # QoS 0 to an offline client: counted
        assert watcher.connect().rc == 0
        watcher.subscribe(SYS + "messages/dropped/#", 0)
        values = _collect(watcher, lambda v: v.get(SYS + "messages/dropped/offline_qos0") == b"1")
        assert values[SYS + "messages/dropped/offline_qos0"] == b"1"
    finally:
        for c in (offline, pub, watcher):
            c.close()


def test_a_hash_subscription_does_not_see_sys(client: Callable[..., Client]) -> None:
    everything = client("hash-all")
    everything.subscribe("#", 0)  # the broker's $SYS topics are retained: none may come
    client("hash-pub").publish("plain", b"marker", qos=1)
    message = everything.expect()
    assert (message.topic, everything.messages.qsize()) == ("plain", 0)  # [MQTT-4.7.2-1]


def test_sys_can_be_turned_off(start_broker: Callable[..., RunningBroker]) -> None:
    running = start_broker(sys_interval=0)
    assert running.metrics()["retained"] == 0
