"""The per-client publish quota ([limits] max_publish_rate): MQTT 5 DISCONNECT 0x97, MQTT 3 a close."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from mqtt5_testkit import connect5, expect_disconnect
from mqtt_testkit import RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    Will,
)
from actorbroker.config import Config

Raw = Callable[..., RawClient]

LIMITS = {"max_publish_rate": 5.0, "max_publish_burst": 5.0}
BURST = [Publish("quota/t", b"%d" % n) for n in range(20)]


@pytest.fixture
def limited(start_broker: Callable[..., RunningBroker],
            config5: Callable[..., Config]) -> RunningBroker:
    return start_broker(config5(limits=LIMITS))


def watcher(raw: RawClient) -> RawClient:
    assert isinstance(connect5(raw, "watcher"), ConnAck)
    raw.send(Subscribe(1, (Subscription("quota/#", 0),)))
    assert raw.recv() == SubAck(1, (0,))
    return raw


def routed_and_will(raw: RawClient) -> list[bytes]:
    """Payloads the watcher gets up to the Will (which comes after the routed ones or among them)."""
    payloads: list[bytes] = []
    while b"gone" not in payloads or len(payloads) < 6:
        packet = raw.recv()
        assert isinstance(packet, Publish)
        payloads.append(packet.payload)
    return payloads


def test_v5_client_over_its_quota_gets_disconnect_0x97(
        limited: RunningBroker, raw5: Raw, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="actorbroker")
    sub = watcher(raw5(limited))
    pub = raw5(limited)
    assert isinstance(connect5(pub, "greedy", will=Will("quota/will", b"gone")), ConnAck)
    pub.send(*BURST)  # one write
    disconnect = expect_disconnect(pub)  # and the socket is closed
    assert disconnect.reason_code == ReasonCode.QUOTA_EXCEEDED
    assert "quota exceeded" in (disconnect.properties.reason_string or "")
    payloads = routed_and_will(sub)
    assert b"gone" in payloads  # not a client DISCONNECT: the Will is published
    routed = [p for p in payloads if p != b"gone"]
    # The burst of 5 (perhaps one more token if the write was split and slow), never all 20.
    assert routed[:5] == [b"0", b"1", b"2", b"3", b"4"] and len(routed) <= 6
    assert any("greedy" in r.getMessage() and "quota exceeded" in r.getMessage()
               for r in caplog.records)


def test_v311_client_over_its_quota_is_closed_without_disconnect(
        limited: RunningBroker, raw: Raw) -> None:
    pub = raw(4, target=limited)
    assert pub.connect("greedy3").reason_code == 0
    pub.send(*BURST)
    with pytest.raises((EOFError, ConnectionResetError)):
        while True:
            packet = pub.recv()  # MQTT 3 has no server DISCONNECT: nothing arrives but the close
            raise AssertionError(f"unexpected {packet!r}")
