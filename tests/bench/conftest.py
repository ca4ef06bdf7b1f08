"""Fixtures for the harness tests: bench/ importable, a Mosquitto per test.

bench/ is not an installed package; the repository root goes on sys.path
(spawned load-generator processes inherit it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import brokers  # noqa: E402


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[brokers.Broker]:
    """A Mosquitto on a free port of 127.0.0.1, as bench.run starts it."""
    if not brokers.MOSQUITTO.exists():
        pytest.skip(f"{brokers.MOSQUITTO} missing (scripts/install-sysdeps.sh installs it)")
    broker = brokers.start("mosquitto", tmp_path)
    yield broker
    broker.stop()
