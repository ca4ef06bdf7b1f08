"""Ops layer: keeps docs/operations.md's metrics table in step with the code. Stdlib and ops.

``python -m actorbroker.ops.docs --write`` rewrites the table between the
``<!-- metrics:begin -->`` and ``<!-- metrics:end -->`` markers from
:data:`~.prometheus.METRICS`; without ``--write`` it exits 1 when the page
is stale (tests/unit/test_operations_docs.py checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .prometheus import render_markdown

__all__ = ["PAGE", "main", "rendered", "stale"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
BEGIN, END = "<!-- metrics:begin -->\n", "<!-- metrics:end -->"


def rendered(text: str) -> str:
    """``text`` with the metrics table between the markers rewritten."""
    head, found, rest = text.partition(BEGIN)
    if not found or END not in rest:
        raise ValueError(f"{PAGE.name} lacks the markers {BEGIN.strip()} ... {END}")
    return head + BEGIN + render_markdown() + END + rest.split(END, 1)[1]


def stale(page: Path = PAGE) -> bool:
    text = page.read_text(encoding="utf-8")
    return rendered(text) != text


def main(argv: list[str]) -> int:
    if "--write" in argv:
        PAGE.write_text(rendered(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {PAGE}")
        return 0
    if stale():
        print(f"{PAGE} is stale: run python -m actorbroker.ops.docs --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
