"""The crash checker imports as ``tests.crashcheck`` (as ``python -m tests.crashcheck`` runs it): the repository root on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
