"""The session layer imports the standard library, the codec and routing only (docs/style.md)."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
before = set(sys.modules)
import actorbroker.session
loaded = set(sys.modules) - before
allowed = ("actorbroker.session", "actorbroker.codec", "actorbroker.routing")
outside = sorted(
    name for name in loaded
    if not name.startswith(allowed)
    and name != "actorbroker"
    and name.partition(".")[0] not in sys.stdlib_module_names
)
print("\\n".join(outside))
print("asyncio" in loaded)
"""


def test_session_loads_nothing_outside_stdlib_codec_and_routing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    *outside, flags = result.stdout.strip().split("\n")
    assert [line for line in outside if line] == []
    assert flags.split()[0] == "False"  # no asyncio
