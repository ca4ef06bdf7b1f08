"""persistence/ imports the standard library and actorbroker.errors only (the positive rule).

import-linter (``make lint``) forbids named packages; this checks that
nothing else slipped in, so that the data pipeline can import the record
format on a Spark worker with nothing but this package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "actorbroker" / "persistence"


def test_persistence_imports_the_stdlib_and_actorbroker_errors_only() -> None:
    offenders = []
    files = sorted(PACKAGE.glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [(alias.name, 0) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "", node.level)]
            else:
                continue
            for name, level in names:
                inside = level == 1
                allowed = level == 0 and (
                    name.split(".")[0] in sys.stdlib_module_names
                    or name in ("__future__", "actorbroker.errors")
                )
                if not (inside or allowed):
                    offenders.append(f"{path.name} imports {'.' * level}{name}")
    assert offenders == []


def test_every_module_states_its_layer_and_stays_under_400_lines() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text()
        assert text.startswith('"""Persistence layer: '), path.name
        assert "Imports the stdlib" in text.splitlines()[0], path.name
        assert len(text.splitlines()) < 400, path.name
