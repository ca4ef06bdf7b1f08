"""The transport's import rule (docs/style.md), the positive way import-linter cannot say.

actorbroker/transport imports the standard library, uvloop, websockets
(its sans-IO protocol, for ws/wss listeners), actorbroker.codec and
actorbroker.ports only (asyncio and ssl are stdlib); actorbroker/ports.py, the
contract both sides import, imports the stdlib and the codec only.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _imports(path: Path) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(alias.name, 0) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "", node.level))
    return found


def _offenders(files: list[Path], allowed: tuple[str, ...], own: str) -> list[str]:
    offenders = []
    for path in files:
        for name, level in _imports(path):
            inside = level == 1 or name == own or name.startswith(own + ".")
            stdlib = level == 0 and name.split(".")[0] in sys.stdlib_module_names
            ok = any(name == a or name.startswith(a + ".") for a in allowed) and level == 0
            if not (inside or stdlib or ok or name == "__future__"):
                offenders.append(f"{path.relative_to(ROOT)} imports {'.' * level}{name}")
    return offenders


def test_transport_imports_stdlib_uvloop_websockets_codec_and_ports_only() -> None:
    files = sorted((ROOT / "actorbroker" / "transport").glob("*.py"))
    assert len(files) >= 8
    allowed = ("uvloop", "websockets", "actorbroker.codec", "actorbroker.ports")
    assert _offenders(files, allowed, "actorbroker.transport") == []


def test_ports_import_stdlib_and_codec_only() -> None:
    files = [ROOT / "actorbroker" / "ports.py"]
    assert _offenders(files, ("actorbroker.codec",), "actorbroker.ports") == []
