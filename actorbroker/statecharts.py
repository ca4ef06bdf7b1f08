"""Tooling: renders the code's transition tables into docs/statecharts/.

Imports the modules that hold state machines (codec, supervisors, ...) and
nothing at runtime depends on it. Each table module exposes four names:

    CHART_NAME   file stem under docs/statecharts/
    CHART_TITLE  caption of the diagram
    INITIAL      the initial state (an Enum member)
    TRANSITIONS  Mapping[(state, event_name), next_state]

``python -m actorbroker.statecharts --write`` writes NAME.dot and NAME.svg (the
SVG needs Graphviz's ``dot``); ``--check`` exits 1 when a file is stale. The
SVG carries the sha256 of the dot source it was rendered from, so staleness is
checked without Graphviz.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import ModuleType

#: Every module that holds a transition table rendered into the docs.
TABLE_MODULES: tuple[str, ...] = (
    "actorbroker.codec.states",
    "supervisors.lifecycle",
    "actorbroker.session.lifecycle",
    "actorbroker.session.qos_outbound",
    "actorbroker.session.qos_inbound",
    "actorbroker.auth.exchange",
)

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs" / "statecharts"
_HASH_MARK = "<!-- actorbroker-statechart dot-sha256="


@dataclass(frozen=True, slots=True)
class Chart:
    """One state machine as the renderer sees it."""

    name: str
    title: str
    initial: Enum
    transitions: Mapping[tuple[Enum, str], Enum]

    @classmethod
    def from_module(cls, module: ModuleType) -> Chart:
        return cls(
            name=module.CHART_NAME,
            title=module.CHART_TITLE,
            initial=module.INITIAL,
            transitions=module.TRANSITIONS,
        )


def charts() -> list[Chart]:
    """Load every chart listed in TABLE_MODULES."""
    return [Chart.from_module(importlib.import_module(m)) for m in TABLE_MODULES]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(chart: Chart) -> str:
    """Deterministic Graphviz source: states in Enum order, events sorted."""
    states = list(type(chart.initial))
    edges: dict[tuple[Enum, Enum], list[str]] = defaultdict(list)
    for (source, event), target in chart.transitions.items():
        edges[(source, target)].append(event)
    order = {state: i for i, state in enumerate(states)}
    lines = [
        f"// Generated from {chart.name}'s transition table by"
        " `python -m actorbroker.statecharts --write`; do not edit.",
        f"digraph {_quote(chart.name)} {{",
        "  rankdir=LR;",
        f"  label={_quote(chart.title)}; labelloc=t; fontname=Helvetica;",
        "  node [shape=box, style=rounded, fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
        "  __start [shape=point, width=0.15];",
    ]
    for state in states:
        lines.append(f"  {_quote(state.name)};")
    lines.append(f"  __start -> {_quote(chart.initial.name)};")
    for (source, target) in sorted(edges, key=lambda e: (order[e[0]], order[e[1]])):
        label = "\\n".join(sorted(edges[(source, target)]))
        lines.append(
            f"  {_quote(source.name)} -> {_quote(target.name)} [label=\"{label}\"];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_digest(dot_source: str) -> str:
    return hashlib.sha256(dot_source.encode()).hexdigest()


def render_svg(dot_source: str) -> str:
    """Run Graphviz and stamp the SVG with the digest of its source."""
    dot = shutil.which("dot")
    if dot is None:
        raise SystemExit("Graphviz 'dot' is not installed (apt-get install graphviz)")
    svg = subprocess.run(
        [dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=True
    ).stdout
    stamp = f"{_HASH_MARK}{dot_digest(dot_source)} -->\n"
    head, sep, rest = svg.partition("?>\n")
    return head + sep + stamp + rest if sep else stamp + svg


def stale_files(docs_dir: Path = DOCS_DIR) -> list[str]:
    """Names of dot/svg files that do not match the current tables."""
    stale: list[str] = []
    for chart in charts():
        dot_source = render_dot(chart)
        dot_path = docs_dir / f"{chart.name}.dot"
        svg_path = docs_dir / f"{chart.name}.svg"
        if not dot_path.exists() or dot_path.read_text() != dot_source:
            stale.append(dot_path.name)
        expected = f"{_HASH_MARK}{dot_digest(dot_source)} -->"
        if not svg_path.exists() or expected not in svg_path.read_text():
            stale.append(svg_path.name)
    return stale


def write_all(docs_dir: Path = DOCS_DIR) -> list[Path]:
    docs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts():
        dot_source = render_dot(chart)
        (docs_dir / f"{chart.name}.dot").write_text(dot_source)
        (docs_dir / f"{chart.name}.svg").write_text(render_svg(dot_source))
        written += [docs_dir / f"{chart.name}.dot", docs_dir / f"{chart.name}.svg"]
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actorbroker.statecharts")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the files")
    mode.add_argument("--check", action="store_true", help="exit 1 if any is stale")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_all():
            print(f"wrote {path}")
        return 0
    stale = stale_files()
    for name in stale:
        print(f"stale: docs/statecharts/{name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
