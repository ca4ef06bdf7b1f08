"""Docs and docstrings point only at files of this repository (docs/style.md, "Types and docs").

A pointer is a path ending in a file extension (``docs/storage.md``,
``actors/figures.py``) or a bare ``.md`` or ``.py`` name, found in the
Markdown docs and in the docstrings and comments of the Python code. A path
must name a file or directory of the repository, resolved from its root,
from the directory of the file that mentions it, or from ``actorbroker/``
(the docs name modules as ``transport/server.py``); a bare name must be the
name of some file of the repository. No text of the
repository, code included, names the machine it was written on (``/work/``,
``../shared``). Docstrings, comments and guides say the rule they follow,
not the number of the issue it came from; docs/benchmarks.md, a history of
measurements, keeps its issue numbers, and so do the benchmarks.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()

CODE_DIRS = ("actorbroker", "supervisors", "tests", "bench", "scripts")
TOP_FILES = ("README.md", "Makefile", "setup.cfg", "pyproject.toml", "MANIFEST.in",
             "constraints.txt", ".ci/run", ".gitignore")
# Not part of the repository: caches, virtualenvs, build output, benchmark results.
SKIP_DIRS = {".git", ".venv", ".venvs", "__pycache__", ".mypy_cache", ".pytest_cache",
             ".hypothesis", "build", "dist", "data", "results"}

EXTENSIONS = ("md", "py", "toml", "cfg", "txt", "json", "dot", "svg", "sh", "png", "html",
              "js", "css", "ini", "yml", "yaml")
_TOKEN = re.compile(r"[\w./~-]+")
_FILE = re.compile(r"\.(?:" + "|".join(EXTENSIONS) + r")$")
_URL = re.compile(r"\w+://\S+")
# What a command shown in the docs writes, and placeholders: not files of the repository.
OUTPUTS = ("bench/results/", "report/", "path/to/")
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])(?:OUT|NAME|TIMESTAMP)(?![A-Za-z])")
# Paths of the operating system (/proc/PID/status, /etc/...), not of a checkout.
SYSTEM = ("/proc/", "/sys/", "/dev/", "/etc/", "/tmp/", "/usr/", "/var/", "/run/")
_OUTSIDE = re.compile(r"/work/|\.\./shared\b")
_ISSUE = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)

# Findings known and not yet fixed, as (file, what was found): none now. The test fails
# when one of them is gone, so that its entry goes too.
PENDING: set[tuple[str, str]] = set()


def _walk(top: Path) -> Iterator[Path]:
    for path in sorted(top.iterdir()):
        if path.is_dir():
            if path.name not in SKIP_DIRS and not path.name.endswith(".egg-info"):
                yield from _walk(path)
        else:
            yield path


@cache
def repository_names() -> frozenset[str]:
    """The name of every file of the repository."""
    return frozenset(p.name for p in _walk(ROOT) if p.suffix != ".pyc")


def _python_files() -> list[Path]:
    return [p for d in CODE_DIRS if (ROOT / d).is_dir() for p in _walk(ROOT / d)
            if p.suffix == ".py"]


def _docs() -> list[Path]:
    return [p for p in _walk(ROOT / "docs") if p.suffix == ".md"] + [ROOT / "README.md"]


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of what a file says to its reader: all of a Markdown file;
    the docstrings and comments of a Python file."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield 1, source
        return
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                yield node.body[0].lineno, doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def pointers(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, pointer) for every file name or path in ``text``."""
    text = _URL.sub(lambda m: " " * len(m.group()), text)
    for match in _TOKEN.finditer(text):
        token = match.group().rstrip(".")
        bare_extension = token.startswith(".") and token.count(".") == 1     # "a ``.py`` file"
        if _FILE.search(token) and not bare_extension:
            yield text.count("\n", 0, match.start()), token


def broken(token: str, where: Path, names: frozenset[str]) -> str | None:
    """Why ``token``, written in file ``where``, is not a pointer into the repository
    (None when it is one, or not a pointer at all)."""
    if any(token.startswith(p) for p in OUTPUTS) or _PLACEHOLDER.search(token):
        return None
    if token.startswith("/"):
        return None if token.startswith(SYSTEM) else "an absolute path"
    if "/" not in token:
        if token.endswith((".md", ".py")) and token not in names:
            return "no file of the repository has this name"
        return None
    for base in (ROOT, where.parent, ROOT / "actorbroker"):
        target = (base / token).resolve()
        if target.is_relative_to(ROOT) and target.exists():
            return None
    return "no such file in the repository"     # or one outside it


@cache
def _all_prose() -> list[tuple[Path, str, int, str]]:
    """(file, its path from the root, line, text) of every doc, docstring and comment."""
    return [(path, path.relative_to(ROOT).as_posix(), line, text)
            for path in _python_files() + _docs() for line, text in prose(path)]


def _findings_pointers() -> list[tuple[str, str, str]]:
    names = repository_names()
    found = []
    for path, rel, line, text in _all_prose():
        for offset, token in pointers(text):
            why = broken(token, path, names)
            if why:
                found.append((rel, token, f"{rel}:{line + offset}: {token}: {why}"))
    return found


def _findings_issues() -> list[tuple[str, str, str]]:
    found = []
    for _, rel, line, text in _all_prose():
        if rel == "docs/benchmarks.md" or rel.startswith(("bench/", "scripts/")):
            continue
        for match in _ISSUE.finditer(text):
            at = line + text.count("\n", 0, match.start())
            found.append((rel, match.group(), f"{rel}:{at}: {match.group()!r}"))
    return found


def _not_pending(found: list[tuple[str, str, str]]) -> list[str]:
    return [shown for rel, what, shown in found if (rel, what) not in PENDING]


def test_pointers_name_files_of_the_repository() -> None:
    assert _not_pending(_findings_pointers()) == []


def test_docstrings_and_guides_say_the_rule_not_the_issue() -> None:
    assert _not_pending(_findings_issues()) == []


def test_nothing_names_the_machine_outside_the_repository() -> None:
    files = [p for d in CODE_DIRS + ("docs",) if (ROOT / d).is_dir() for p in _walk(ROOT / d)]
    files += [ROOT / f for f in TOP_FILES if (ROOT / f).is_file()]
    offenders = []
    for path in files:
        if path == THIS or path.suffix in (".png", ".svg", ".pyc"):
            continue        # this file spells the patterns out; images hold no paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_pending_findings_are_still_there() -> None:
    """An entry of PENDING that was fixed must leave the list."""
    found = {(rel, what) for rel, what, _ in _findings_pointers() + _findings_issues()}
    assert PENDING - found == set()


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    names = repository_names()
    where = ROOT / "docs" / "architecture.md"
    text = ("See DESIGN.md and ../../shared/STYLE.md, docs/nothing-here.md, /home/x/notes.md;\n"
            "but docs/storage.md, transport/output.py, style.md and ../docs/storage.md exist,\n"
            "as do /proc/PID/status, OUT/report.html and https://example.org/a.md.")
    verdicts = {token: broken(token, where, names) for _, token in pointers(text)}
    assert {t for t, why in verdicts.items() if why} == {
        "DESIGN.md", "../../shared/STYLE.md", "docs/nothing-here.md", "/home/x/notes.md"}
    assert "https" not in " ".join(verdicts) and "example.org" not in " ".join(verdicts)
    assert _OUTSIDE.search("read " + "/wo" + "rk/shared/STYLE.md")
    assert _ISSUE.search("the hijack of issue 17") and _ISSUE.search("(issue #15)")
    module = tmp_path / "m.py"
    module.write_text('"""Top: see A.md."""\nx = "B.md"  # C.md\n\n\ndef f():\n    """D.md"""\n')
    said = " ".join(text for _, text in prose(module))
    assert "A.md" in said and "C.md" in said and "D.md" in said and "B.md" not in said
