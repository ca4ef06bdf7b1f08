"""Wills: published on abnormal close, keepalive timeout or protocol error; never after DISCONNECT."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import Connect, Will

Clients = Callable[..., Client]
Raw = Callable[..., RawClient]


@pytest.mark.parametrize("level", [3, 4])
def test_will_is_published_when_the_connection_drops(client: Clients, level: int) -> None:
    watcher = client(f"w-watch{level}")
    watcher.subscribe("will/+", 2)
    doomed = client(f"w-doomed{level}", level=level, will=("will/doomed", b"gone", 1, False))
    doomed.drop()  # [MQTT-3.1.2-8]
    message = watcher.expect()
    assert (message.topic, message.payload, message.qos, message.retain) == (
        "will/doomed", b"gone", 1, False)


def test_no_will_after_disconnect(client: Clients, broker: RunningBroker) -> None:
    watcher = client("nw-watch")
    watcher.subscribe("will/polite", 1)
    polite = client("nw-polite", will=("will/polite", b"should not", 1, False))
    polite.disconnect()  # [MQTT-3.1.2-10]: the Will is discarded
    broker.wait_until(lambda m: m["clients_connected"] == 1)
    marker = client("nw-marker")
    marker.publish("will/polite", b"marker", qos=1)
    assert watcher.expect().payload == b"marker"


def test_will_retain_and_qos_are_honoured(client: Clients, broker: RunningBroker) -> None:
    doomed = client("wr-doomed", will=("will/retained", b"last words", 2, True))
    retained = broker.metrics()["retained"]
    doomed.drop()
    # The Will is published when the broker handles the lost connection: wait until it is
    # retained, else "late" may subscribe first and get it live (RETAIN=0).
    broker.wait_until(lambda m: m["retained"] > retained)
    late = client("wr-late")
    late.subscribe("will/retained", 2)
    message = late.expect()
    assert (message.payload, message.qos, message.retain) == (b"last words", 2, True)


def test_will_on_keepalive_timeout(client: Clients, raw: Raw, broker: RunningBroker) -> None:
    watcher = client("ka-watch")
    watcher.subscribe("will/ka", 0)
    silent = raw()
    silent.connect("ka-silent", keepalive=1, will=Will("will/ka", b"timed out"))
    # Nothing more is sent: after 1.5 keepalive periods the broker closes ([MQTT-3.1.2-24]).
    silent.expect_closed(timeout=5)
    assert watcher.expect().payload == b"timed out"
    assert broker.metrics()["keepalive_timeouts"] == 1


def test_will_on_protocol_error(client: Clients, raw: Raw) -> None:
    watcher = client("pe-watch")
    watcher.subscribe("will/pe", 0)
    rude = raw()
    rude.connect("pe-rude", will=Will("will/pe", b"broke the rules"))
    rude.send_bytes(b"\x00\x00")  # reserved packet type 0: malformed
    rude.expect_closed()
    assert watcher.expect().payload == b"broke the rules"


def test_will_topic_must_be_valid(raw: Raw) -> None:
    r = raw()
    r.send(Connect("MQTT", 4, "bad-will", True, 60, will=Will("bad/+/will", b"x")))
    r.expect_closed()  # 3.1.1 has no return code for it: closed without CONNACK
