"""Top layer: a pytest plugin that runs a real actorbroker in the test process. May import everything.

Installed with the package (entry point ``pytest11``), so any project that
depends on actorbroker gets the fixture without configuration::

    def test_my_device(mqtt_broker):
        device = MyDevice(host=mqtt_broker.host, port=mqtt_broker.port)
        ...

``mqtt_broker`` (function scope) starts a broker on 127.0.0.1, on a free
port, with its data directory under the test's ``tmp_path``, and stops it
after the test (closing every connection). It yields a
:class:`~actorbroker.app.RunningBroker`: ``host``, ``port``, ``config``,
``metrics()`` (the broker's counters) and ``wait_until(predicate)``, e.g.
``mqtt_broker.wait_until(lambda m: m["subscriptions"] == 1)`` to know that
a device under test has subscribed before publishing to it.

To change the configuration, override the ``mqtt_broker_config`` fixture
in your conftest.py (it receives ``tmp_path``; see :func:`broker_config`)::

    @pytest.fixture
    def mqtt_broker_config(tmp_path):
        return actorbroker.testing.broker_config(tmp_path, max_queued_messages=10)

Disable the plugin with ``-p no:actorbroker``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actorbroker.app import Broker, RunningBroker
from actorbroker.config import Config, ListenerConfig, NodeConfig

__all__ = ["broker_config", "mqtt_broker", "mqtt_broker_config"]


def broker_config(tmp_path: Path, **limits: Any) -> Config:
    """The defaults, on 127.0.0.1 port 0, data in ``tmp_path``; ``limits`` replace ``[limits]`` options."""
    config = Config(listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
                    node=NodeConfig(name="pytest", data_dir=str(tmp_path / "actorbroker-data")))
    if limits:
        config = dataclasses.replace(config, limits=dataclasses.replace(config.limits, **limits))
    return config


@pytest.fixture
def mqtt_broker_config(tmp_path: Path) -> Config:
    """The configuration ``mqtt_broker`` starts with (override it to change it)."""
    return broker_config(tmp_path)


@pytest.fixture
def mqtt_broker(mqtt_broker_config: Config) -> Iterator[RunningBroker]:
    """A running actorbroker for this test: ``.host``, ``.port``, ``.config``, ``.metrics()``."""
    with Broker.run_in_thread(mqtt_broker_config) as running:
        yield running
