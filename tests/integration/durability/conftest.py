"""Durability tests: the helpers next to this file are importable (``crash_broker``, ``durability_kit``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
