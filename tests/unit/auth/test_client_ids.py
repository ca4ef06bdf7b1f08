"""Client id patterns per user: %u literal, * and ? as in a shell, anonymous clients."""

from __future__ import annotations

import pytest

from actorbroker.auth import ClientIdPatterns

PATTERNS = ClientIdPatterns(["%u", "%u-*", "lab-??"])


@pytest.mark.parametrize("client_id, user, allowed", [
    ("alice", "alice", True),
    ("alice-", "alice", True),
    ("alice-a/b\n", "alice", True),
    ("alicex", "alice", False),
    ("xalice", "alice", False),
    ("lab-01", None, True),
    ("lab-1", None, False),
    ("alice", None, False),
    ("", None, False),
    ("a*", "a*", True),          # a user name is literal...
    ("ab", "a*", False),         # ...its * matches nothing else
    ("a.c", "a.c", True),
    ("abc", "a.c", False),
    ("[x]-1", "[x]", True),
])
def test_patterns(client_id: str, user: str | None, allowed: bool) -> None:
    assert PATTERNS.allows(client_id, user) is allowed


def test_no_patterns_is_falsy() -> None:
    assert not ClientIdPatterns([]) and PATTERNS
    assert str(PATTERNS) == "%u, %u-*, lab-??"
