"""Fixtures for the operations HTTP listener: a real broker with [http] on 127.0.0.1 port 0.

* ``ops_broker(**options)``: a running broker (``broker_config`` options,
  e.g. ``data_dir=None`` for memory) serving HTTP; its ``http_url``.
* ``http``: an :class:`~ops_testkit.Http` client (urllib) with JSON helpers.

Helpers (``Http``, ``scrape``: /metrics parsed by prometheus_client's own
parser) are in ``ops_testkit.py``; the broker fixtures (``start_broker``,
``client``) in ../conftest.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actorbroker.app import RunningBroker

sys.path.insert(0, str(Path(__file__).parent))

from mqtt_testkit import broker_config  # noqa: E402
from ops_testkit import Http  # noqa: E402


@pytest.fixture
def ops_broker(start_broker: Callable[..., RunningBroker], tmp_path: Path
               ) -> Callable[..., RunningBroker]:
    """Factory: a broker serving HTTP on a free port (``options``: any broker_config option)."""
    def start(**options: Any) -> RunningBroker:
        options.setdefault("http_enabled", True)
        options.setdefault("http_port", 0)
        return start_broker(broker_config(tmp_path, **options))
    return start


@pytest.fixture
def http() -> Http:
    return Http()
