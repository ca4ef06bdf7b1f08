"""Fixtures for the MQTT 5 broker tests (the broker fixtures are in ../conftest.py).

* ``client5(client_id="", connect=True, target=None, **Client5 options)``: a
  paho MQTT 5 client of ``broker`` (or ``target``), connected unless told
  otherwise; closed after the test. ``connect`` takes CONNECT properties:
  ``client5("c", connect=False).connect(SessionExpiryInterval=60)``.
* ``raw5(target=None)``: a :class:`RawClient` speaking MQTT 5.
* ``config5(**sections)``: the test broker's configuration with whole
  sections replaced, e.g. ``config5(mqtt5={"receive_maximum": 2})``.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mqtt5_testkit import Client5  # noqa: E402
from mqtt_testkit import RawClient, broker_config, client_factory  # noqa: E402

from actorbroker.app import RunningBroker  # noqa: E402
from actorbroker.config import Config  # noqa: E402


@pytest.fixture
def config5(tmp_path: Path) -> Callable[..., Config]:
    made = itertools.count(1)

    def make(**sections: dict[str, Any]) -> Config:
        # Its own data directory: the default ``broker`` may run beside it.
        config = broker_config(tmp_path / f"broker{next(made)}")
        for name, values in sections.items():
            config = dataclasses.replace(
                config, **{name: dataclasses.replace(getattr(config, name), **values)})
        return config
    return make


@pytest.fixture
def client5(broker: RunningBroker) -> Iterator[Callable[..., Client5]]:
    yield from client_factory(Client5, broker)


@pytest.fixture
def raw5(broker: RunningBroker) -> Iterator[Callable[..., RawClient]]:
    made: list[RawClient] = []

    def make(target: RunningBroker | None = None) -> RawClient:
        where = target or broker
        r = RawClient(where.host, where.port, 5)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()
