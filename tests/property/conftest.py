"""Property tests: the kits next to this file are importable (``durable_kit``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
