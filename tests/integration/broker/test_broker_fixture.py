"""The pytest plugin: ``mqtt_broker`` as a user's test would use it, and its entry point."""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from actorbroker.app import RunningBroker
from actorbroker.config import Config
from actorbroker.testing import broker_config


def test_the_plugin_is_registered_for_pytest() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("actorbroker") == "actorbroker.testing"


def test_a_device_talks_to_the_fixture_broker(mqtt_broker: RunningBroker) -> None:
    """What a user writes: a thermostat that answers set-points on its state topic."""
    answered = threading.Event()
    states: list[bytes] = []

    device = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="thermostat")

    def on_connect(client: mqtt.Client, *_: object) -> None:
        client.subscribe("home/thermostat/set", qos=1)

    def on_message(client: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        client.publish("home/thermostat/state", b"target=" + msg.payload, qos=1, retain=True)

    device.on_connect = on_connect
    device.on_message = on_message
    device.connect(mqtt_broker.host, mqtt_broker.port)
    device.loop_start()
    app = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="app")

    def on_state(_c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        states.append(msg.payload)
        answered.set()

    app.on_message = on_state
    app.connect(mqtt_broker.host, mqtt_broker.port)
    app.loop_start()
    try:
        app.subscribe("home/thermostat/state", qos=1)
        mqtt_broker.wait_until(lambda m: m["subscriptions"] == 2)  # both have subscribed
        app.publish("home/thermostat/set", b"21.5", qos=1).wait_for_publish(5)
        assert answered.wait(5)
        assert states == [b"target=21.5"]
        assert mqtt_broker.metrics()["retained"] >= 1
    finally:
        for c in (device, app):
            c.disconnect()
            c.loop_stop()


@pytest.fixture
def mqtt_broker_config(tmp_path: Path) -> Config:
    return broker_config(tmp_path, max_queued_messages=7)


def test_the_configuration_can_be_overridden(mqtt_broker: RunningBroker) -> None:
    assert mqtt_broker.config.limits.max_queued_messages == 7
    assert mqtt_broker.host == "127.0.0.1" and mqtt_broker.port > 0
