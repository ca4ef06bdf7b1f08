"""Nothing outside actorbroker/pipeline imports pyspark; the pipeline imports only its stack and
the record format; the broker and the CLI start without loading pyspark. Also: docs/pipeline.md
holds the schema tables of the code.

import-linter (``make lint``, contracts in setup.cfg) forbids the same edges;
this AST scan also covers packages added later, and states the positive rule.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPARK_STACK = {"pyspark", "pyarrow", "pandas", "matplotlib", "numpy", "py4j"}
PIPELINE_MAY_IMPORT = SPARK_STACK | {"actorbroker.persistence", "actorbroker.errors"}


def imports(path: Path) -> list[tuple[str, int]]:
    """(dotted module, relative level) of every import in ``path``, function-level ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
    return found


def test_only_the_pipeline_imports_the_spark_stack() -> None:
    offenders = []
    for path in sorted([*(ROOT / "actorbroker").rglob("*.py"), *(ROOT / "supervisors").rglob("*.py")]):
        if (ROOT / "actorbroker" / "pipeline") in path.parents:
            continue
        for name, level in imports(path):
            if level == 0 and name.split(".")[0] in {"pyspark", "pyarrow", "pandas", "py4j"}:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_the_pipeline_imports_its_stack_and_the_record_format_only() -> None:
    files = sorted((ROOT / "actorbroker" / "pipeline").glob("*.py"))
    assert len(files) >= 10
    offenders = []
    for path in files:
        for name, level in imports(path):
            if level == 1 or name == "__future__" or name.split(".")[0] in sys.stdlib_module_names:
                continue
            if not any(name == allowed or name.startswith(allowed + ".")
                       for allowed in PIPELINE_MAY_IMPORT):
                offenders.append(f"{path.name} imports {'.' * level}{name}")
    assert offenders == []


def test_the_broker_and_the_cli_load_no_pyspark() -> None:
    code = ("import sys, actorbroker.cli, actorbroker.app\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{sorted(SPARK_STACK - {'numpy'})!r})\n"
            "print(loaded)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_docs_hold_the_schema_tables_of_the_code() -> None:
    from actorbroker.pipeline.schema import render_schema_tables

    assert render_schema_tables() in (ROOT / "docs" / "pipeline.md").read_text()
