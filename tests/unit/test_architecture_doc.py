"""docs/architecture.md, "Who tells whom": every message between actors is in its table.

The messages are the classes each messages module exports (``__all__``),
but for the transport's protocols, which the text below the table names.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Protocol

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
MODULES = ("actorbroker.actors.messages", "actorbroker.actors.storage.requests",
           "actorbroker.ports")


def _table() -> str:
    text = DOC.read_text()
    start = text.index("## Who tells whom")
    return text[start:text.index("\n## ", start + 1)]


def _messages(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    return [name for name in module.__all__
            if inspect.isclass(cls := getattr(module, name))
            and not (issubclass(cls, Protocol) and getattr(cls, "_is_protocol", False))]


@pytest.mark.parametrize("module_name", MODULES)
def test_every_message_is_in_the_table(module_name: str) -> None:
    table = _table()
    named = set(re.findall(r"`(\w+)`", table))
    missing = [name for name in _messages(module_name) if name not in named]
    assert not missing, f"docs/architecture.md, 'Who tells whom' lacks {missing}"


def test_the_table_names_no_message_that_is_gone() -> None:
    known = {name for m in MODULES for name in importlib.import_module(m).__all__}
    rows = [line for line in _table().splitlines() if line.startswith("| `")]
    first_cells = [line.split("|")[1] for line in rows]
    gone = [name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)
            if name not in known]
    assert rows and not gone, gone
