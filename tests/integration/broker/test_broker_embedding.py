"""Embedding: a broker made in code writes no file unless given a data directory.

``Broker(Config())``, ``Broker.run_in_thread`` and the ``mqtt_broker``
fixture keep sessions and messages in memory when no ``data_dir`` is given
(``actorbroker serve`` defaults to ./data instead); ``broker_config`` takes
any option by its name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mqtt_testkit import Client

from actorbroker.app import Broker, RunningBroker
from actorbroker.config import SECTIONS, Config, InvalidConfigError, ListenerConfig
from actorbroker.testing import broker_config


def _qos1_round_trip(running: RunningBroker) -> None:
    """A persistent subscriber gets a retained QoS 1 message, and its session back."""
    sub = Client(running.host, running.port, "keeper", clean=False)
    pub = Client(running.host, running.port, "pub")
    try:
        assert not sub.connect().session_present
        sub.subscribe("e/#", qos=1)
        pub.connect()
        pub.publish("e/1", b"kept", qos=1, retain=True)
        assert sub.expect().payload == b"kept"
        sub.disconnect()
        again = Client(running.host, running.port, "keeper", clean=False)
        try:
            assert again.connect().session_present
        finally:
            again.close()
    finally:
        sub.close()
        pub.close()


def test_an_embedded_broker_without_a_data_dir_writes_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Broker.run_in_thread(Config(listeners=(ListenerConfig(port=0),))) as running:
        assert running.config.node.data_dir is None and running.node.durability is None
        _qos1_round_trip(running)
    assert list(tmp_path.iterdir()) == []


def test_the_fixture_broker_is_in_memory(mqtt_broker: RunningBroker) -> None:
    assert mqtt_broker.config.node.data_dir is None
    assert mqtt_broker.node.durability is None
    _qos1_round_trip(mqtt_broker)


def test_a_data_dir_keeps_the_commit_log(tmp_path: Path) -> None:
    with Broker.run_in_thread(broker_config(tmp_path)) as running:
        assert running.node.durability is not None
        _qos1_round_trip(running)
    assert (tmp_path / "actorbroker-data" / "log").is_dir()


def test_broker_config_takes_every_option_by_its_name() -> None:
    defaults = Config()
    for section in SECTIONS:
        part = getattr(defaults, section.name)
        part = part[0] if section.is_array else part
        for name, spec in section.options():
            value = getattr(part, name)
            if value is None:  # data_dir, allow_anonymous: computed when unset
                value = {str: "elsewhere", bool: True}[spec.kind]
            for key in (name, f"{section.name}_{name}"):
                try:
                    built = getattr(broker_config(**{key: value}), section.name)
                except TypeError:
                    continue  # the bare name is another section's (port: [[listeners]])
                if getattr(built[0] if section.is_array else built, name) == value:
                    break
            else:
                raise AssertionError(f"{section.name}.{name} cannot be set by name")
    config = broker_config(max_qos=1, interval=0, durability="os", allow_anonymous=False,
                           bind="::1", level="debug", receive_maximum=5)
    assert (config.limits.max_qos, config.sys.interval, config.storage.durability) == (1, 0.0, "os")
    assert not config.auth.allow_anonymous and config.mqtt5.receive_maximum == 5
    assert (config.listeners[0].bind, config.listeners[0].port, config.log.level) == (
        "::1", 0, "debug")
    served = broker_config(port=1884, http_enabled=True, http_port=0)
    assert (served.listeners[0].port, served.http.enabled, served.http.port) == (1884, True, 0)


def test_broker_config_refuses_unknown_options_and_bad_values() -> None:
    with pytest.raises(TypeError, match="unknown option 'max_qso'; did you mean max_qos"):
        broker_config(max_qso=1)
    with pytest.raises(InvalidConfigError, match="limits.max_qos"):
        broker_config(max_qos=3)
