"""Fixtures for the limit and overload tests (the broker fixtures are in ../conftest.py).

* ``served(**options)``: ``actorbroker serve`` in a subprocess with those
  options in its config file (:class:`served_kit.Served`), stopped afterwards;
  its RSS is read from /proc.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # bench/ (the fuzzer) is not an installed package
    sys.path.insert(0, str(ROOT))

from served_kit import Served  # noqa: E402


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    made: list[Served] = []

    def start(**options: Any) -> Served:
        broker = Served(tmp_path / f"broker{len(made)}", **options)
        made.append(broker)
        return broker

    yield start
    for broker in made:
        broker.stop()
