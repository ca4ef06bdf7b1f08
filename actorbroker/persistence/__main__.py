"""Persistence layer: ``python -m actorbroker.persistence [--write|--check]``. Imports the stdlib and actorbroker.errors only."""

from __future__ import annotations

import sys

from .formatdoc import main

sys.exit(main())
