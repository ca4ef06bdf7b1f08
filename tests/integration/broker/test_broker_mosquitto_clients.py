"""Debian's mosquitto_pub/mosquitto_sub against the in-process broker (MQTT 3.1 and 3.1.1)."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest
from mqtt_testkit import Client, mosquitto_pub, mosquitto_sub

from actorbroker.app import RunningBroker

VERSIONS = ["mqttv31", "mqttv311"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("qos", ["0", "1", "2"])
def test_pub_sub_with_the_mosquitto_clients(broker: RunningBroker, version: str,
                                            qos: str) -> None:
    sub = mosquitto_sub(broker.host, str(broker.port), "-V", version, "-i", f"ms-{version}",
                        "-t", "mc/+", "-q", qos, "-C", "2", "-v", "-W", "10")
    broker.wait_until(lambda m: m["subscriptions"] == 1)
    for payload in ("one", "two"):
        result = mosquitto_pub(broker.host, str(broker.port), "-V", version, "-t", "mc/t",
                               "-m", payload, "-q", qos)
        assert result.returncode == 0, result.stderr
    out, err = sub.communicate(timeout=15)
    assert (sub.returncode, out) == (0, "mc/t one\nmc/t two\n"), err


def test_retained_only_and_removal(broker: RunningBroker) -> None:
    assert mosquitto_pub(broker.host, str(broker.port), "-t", "mr/a", "-m", "kept", "-r",
                         "-q", "1").returncode == 0
    sub = mosquitto_sub(broker.host, str(broker.port), "-t", "mr/#", "--retained-only", "-v",
                        "-C", "1", "-W", "10")
    out, err = sub.communicate(timeout=15)
    assert out == "mr/a kept\n", err
    registry = broker.node.names.registry()
    assert registry is not None
    assert registry.proxy().retained_message("mr/a").get(timeout=5).payload == b"kept"
    assert mosquitto_pub(broker.host, str(broker.port), "-t", "mr/a", "-n", "-r",
                         "-q", "1").returncode == 0
    # PUBACK came after the message was handed to the registry: its inbox has it before this ask.
    assert registry.proxy().retained_message("mr/a").get(timeout=5) is None


def test_the_will_of_a_killed_mosquitto_sub(broker: RunningBroker,
                                            client: Callable[..., Client]) -> None:
    watcher = client("ms-will-watch")
    watcher.subscribe("mw/status", 1)
    doomed = mosquitto_sub(broker.host, str(broker.port), "-i", "ms-doomed", "-t", "mw/none",
                           "--will-topic", "mw/status", "--will-payload", "offline",
                           "--will-qos", "1")
    try:
        broker.wait_until(lambda m: m["subscriptions"] == 2)
        doomed.send_signal(signal.SIGKILL)  # no DISCONNECT: the socket just closes
    finally:
        doomed.wait(10)
    message = watcher.expect()
    assert (message.topic, message.payload, message.qos) == ("mw/status", b"offline", 1)
