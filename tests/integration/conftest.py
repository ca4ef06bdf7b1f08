"""Fixtures for broker integration tests: a real broker on 127.0.0.1 port 0, real clients.

* ``broker``: a broker with the default settings (``$SYS`` every 10 s),
  running in a background thread (``Broker.run_in_thread``); its
  ``host``/``port``/``config``, ``metrics()`` and ``wait_until(...)``.
* ``start_broker(config=None, **settings)``: more brokers, or one with other
  settings (``NodeSettings`` fields such as ``sys_interval``,
  ``topic_idle``, or a whole ``Config``); all stopped after the test.
* ``client(client_id, **options)``: a connected paho :class:`Client` of the
  ``broker`` (``connect=False`` to connect yourself); closed after the test.
* ``raw(level=4)``: a :class:`RawClient` socket to the ``broker``.

Helpers live in ``mqtt_testkit.py`` next to this file (import it as
``from mqtt_testkit import ...``: tests run with --import-mode=importlib).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from actorbroker.actors import NodeSettings
from actorbroker.app import Broker, RunningBroker
from actorbroker.config import Config

sys.path.insert(0, str(Path(__file__).parent))

from mqtt_testkit import Client, RawClient, broker_config, client_factory  # noqa: E402


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., RunningBroker]]:
    """Factory: ``start_broker(config=None, **NodeSettings overrides)``."""
    with ExitStack() as stack:
        def start(config: Config | None = None, **settings: Any) -> RunningBroker:
            config = config or broker_config(tmp_path)
            node_settings = NodeSettings.from_config(config, **settings)
            return stack.enter_context(Broker.run_in_thread(config, settings=node_settings))
        yield start


@pytest.fixture
def broker(start_broker: Callable[..., RunningBroker]) -> RunningBroker:
    """A running broker with default settings."""
    return start_broker()


@pytest.fixture
def client(broker: RunningBroker) -> Iterator[Callable[..., Client]]:
    """Factory: ``client(client_id="", connect=True, **Client options)``, closed afterwards."""
    yield from client_factory(Client, broker)


@pytest.fixture
def raw(broker: RunningBroker) -> Iterator[Callable[..., RawClient]]:
    """Factory: ``raw(level=4)``, a RawClient socket to ``broker``, closed afterwards."""
    made: list[RawClient] = []

    def make(level: int = 4, *, target: RunningBroker | None = None) -> RawClient:
        where = target or broker
        r = RawClient(where.host, where.port, level)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()
