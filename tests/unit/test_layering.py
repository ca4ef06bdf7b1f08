"""Import rules from docs/style.md that import-linter cannot express.

import-linter (``make lint``) forbids named packages; this test checks the
positive rule: the codec and routing cores import the standard library only.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB_ONLY = ("actorbroker/codec", "actorbroker/routing")


def _imports(path: Path) -> set[tuple[str, int]]:
    """(dotted module, relative level) for every import statement in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(alias.name, 0) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "", node.level))
    return found


@pytest.mark.parametrize("package", STDLIB_ONLY)
def test_core_imports_stdlib_only(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    if not files:
        pytest.skip(f"{package} not present")
    own = package.replace("/", ".")
    offenders = []
    for path in files:
        for name, level in _imports(path):
            # `from . import x` stays inside the package; `from .. import` leaves it.
            inside = level == 1 or name == own or name.startswith(own + ".")
            stdlib = level == 0 and name.split(".")[0] in sys.stdlib_module_names
            if not (inside or stdlib or name == "__future__"):
                offenders.append(f"{path.relative_to(ROOT)} imports {'.' * level}{name}")
    assert offenders == []
