"""The routing layer imports the standard library only (docs/style.md, import direction)."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
before = set(sys.modules)
import actorbroker.routing
loaded = set(sys.modules) - before
stdlib = sys.stdlib_module_names
outside = sorted(
    name for name in loaded
    if not name.startswith("actorbroker.routing")
    and name != "actorbroker"
    and name.partition(".")[0] not in stdlib
)
print("\\n".join(outside))
"""


def test_routing_loads_nothing_outside_the_stdlib() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == []
