"""Top layer: a pytest plugin that runs a real actorbroker in the test process. May import everything.

Installed with the package (entry point ``pytest11``), so any project that
depends on actorbroker gets the fixture without configuration::

    def test_my_device(mqtt_broker):
        device = MyDevice(host=mqtt_broker.host, port=mqtt_broker.port)
        ...

``mqtt_broker`` (function scope) starts a broker on 127.0.0.1, on a free
port, in memory (no data directory: nothing is written to disk), and stops
it after the test (closing every connection). It yields a
:class:`~actorbroker.app.RunningBroker`: ``host``, ``port``, ``config``,
``metrics()`` (the broker's counters) and ``wait_until(predicate)``, e.g.
``mqtt_broker.wait_until(lambda m: m["subscriptions"] == 1)`` to know that
a device under test has subscribed before publishing to it.

To change the configuration, override the ``mqtt_broker_config`` fixture
in your conftest.py (see :func:`broker_config`; any option, by its name in
actorbroker.toml)::

    @pytest.fixture
    def mqtt_broker_config(tmp_path):
        # the commit log under tmp_path, as in production; 10 queued messages
        return actorbroker.testing.broker_config(tmp_path, max_queued_messages=10)

Disable the plugin with ``-p no:actorbroker``.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actorbroker.app import Broker, RunningBroker
from actorbroker.config import SECTIONS, Config, ListenerConfig

__all__ = ["broker_config", "mqtt_broker", "mqtt_broker_config"]


def broker_config(tmp_path: Path | None = None, **options: Any) -> Config:
    """A broker on 127.0.0.1 port 0, node "pytest", with ``options`` changed.

    Without ``tmp_path`` (or a ``data_dir`` option) the broker keeps
    everything in memory; with it, the commit log lives in
    ``tmp_path/actorbroker-data`` as in production. ``options`` name any
    option of actorbroker.toml (docs/configuration.md) by itself, whatever
    its section: ``max_qos=1``, ``durability="os"``, ``interval=0`` ([sys]),
    ``allow_anonymous=False``; a name two sections share (``port``, ``bind``,
    ``enabled``) is the first one's, and ``SECTION_NAME`` names any option
    (``http_enabled=True, http_port=0``); a [[listeners]] option changes the first
    listener, ``listeners=(ListenerConfig(...), ...)`` replaces them all.
    Values are checked as in a file (:class:`~actorbroker.config.InvalidConfigError`).
    """
    listeners = options.pop("listeners", (ListenerConfig(bind="127.0.0.1", port=0),))
    options.setdefault("name", "pytest")
    if tmp_path is not None:
        options.setdefault("data_dir", str(tmp_path / "actorbroker-data"))
    owners: dict[str, tuple[str, str]] = {}
    for section in SECTIONS:
        for name, _ in section.options():
            owners.setdefault(name, (section.name, name))  # the first section keeps a bare name
            owners[f"{section.name}_{name}"] = (section.name, name)
    changes: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        if key not in owners:
            close = difflib.get_close_matches(key, list(owners), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise TypeError(f"broker_config() got an unknown option {key!r}{hint}")
        section_name, name = owners[key]
        changes.setdefault(section_name, {})[name] = value
    config = Config(listeners=tuple(listeners))
    sections: dict[str, Any] = {}
    for part, values in changes.items():
        if part == "listeners":
            first, *rest = config.listeners
            sections[part] = (dataclasses.replace(first, **values), *rest)
        else:
            sections[part] = dataclasses.replace(getattr(config, part), **values)
    return dataclasses.replace(config, **sections)


@pytest.fixture
def mqtt_broker_config() -> Config:
    """The configuration ``mqtt_broker`` starts with (override it to change it)."""
    return broker_config()


@pytest.fixture
def mqtt_broker(mqtt_broker_config: Config) -> Iterator[RunningBroker]:
    """A running actorbroker for this test: ``.host``, ``.port``, ``.config``, ``.metrics()``."""
    with Broker.run_in_thread(mqtt_broker_config) as running:
        yield running
