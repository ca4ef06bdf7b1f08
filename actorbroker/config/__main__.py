"""Tooling: ``python -m actorbroker.config --write | --check`` for the generated config docs. Imports actorbroker.config only.

``--write`` regenerates docs/configuration.md and docs/actorbroker.example.toml
from the schema; ``--check`` exits 1 when either is stale.
"""

from __future__ import annotations

import argparse
import sys

from .render import DOCS_DIR, stale_files, write_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actorbroker.config")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the docs")
    mode.add_argument("--check", action="store_true", help="exit 1 if either is stale")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_all():
            print(f"wrote {path}")
        return 0
    stale = stale_files()
    for name in stale:
        print(f"stale: {DOCS_DIR.name}/{name} (run python -m actorbroker.config --write)",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
