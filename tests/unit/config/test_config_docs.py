"""docs/configuration.md and docs/actorbroker.example.toml are generated from the schema."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from actorbroker.config import SECTIONS, loads, render

ROOT = Path(__file__).resolve().parents[3]


def test_generated_docs_are_current() -> None:
    stale = render.stale_files()
    assert stale == [], (
        f"stale {stale}: run `python -m actorbroker.config --write` and commit docs/"
    )


def test_the_check_command_agrees() -> None:
    result = subprocess.run([sys.executable, "-m", "actorbroker.config", "--check"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stderr) == (0, "")


def test_a_changed_help_text_makes_the_docs_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render.write_all(tmp_path)
    assert render.stale_files(tmp_path) == []
    original = render.render_markdown
    monkeypatch.setattr(render, "render_markdown", lambda: original() + "changed\n")
    assert render.stale_files(tmp_path) == [render.MARKDOWN_NAME]
    (tmp_path / render.EXAMPLE_NAME).unlink()
    assert render.stale_files(tmp_path) == [render.MARKDOWN_NAME, render.EXAMPLE_NAME]


def test_every_option_is_documented_with_its_default() -> None:
    markdown = render.render_markdown()
    for section in SECTIONS:
        heading = f"## `{section.header}`"
        assert heading in markdown
        # This section's rows: from its heading to the next one (names repeat: enabled).
        own = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
        for name, spec in section.options():
            row = next(line for line in own.splitlines() if line.startswith(f"| `{name}` |"))
            assert spec.help in row
    assert '| `port` | `1883` |' in markdown
    assert '| `data_dir` | "./data" for actorbroker serve; none in code (in memory) |' in markdown
    assert "| `name` | the host name |" in markdown


def test_the_example_sets_every_option_but_the_host_name() -> None:
    example = render.render_example()
    loads(example)
    document_keys = {line.split(" = ")[0] for line in example.splitlines()
                     if " = " in line and not line.startswith("#")}
    options = {name for s in SECTIONS for name, spec in s.options() if spec.default_doc is None}
    assert document_keys == options
    assert '# name = "..."  # default: the host name' in example


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def test_config_imports_the_stdlib_and_actorbroker_errors_only() -> None:
    files = [*sorted((ROOT / "actorbroker" / "config").glob("*.py")),
             ROOT / "actorbroker" / "errors.py"]
    offenders = []
    for path in files:
        for name in _imports(path):
            ok = (
                name.startswith(".")
                or name in ("__future__", "actorbroker.errors")
                or name.split(".")[0] in sys.stdlib_module_names
            )
            if not ok or (path.name == "errors.py" and name.startswith("actorbroker")):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []
