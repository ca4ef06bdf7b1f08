"""Auth layer: which client ids a user may connect with. Stdlib only.

``[auth] client_id_patterns`` lists patterns such as ``"%u"`` and
``"%u-*"``: when it is set, a CONNECT's client id must match one of them,
``%u`` standing for the client's user name (taken literally: a user named
``a*`` matches only ``a*``), ``*`` for any characters and ``?`` for one, as
in a shell. EMQX's client id patterns and Mosquitto's ``clientid_prefixes``
do the same: a user can then only ever reach sessions named after it.

A client without a user name matches only the patterns without ``%u``.
A client id the broker assigned (an empty one in the CONNECT) is not
checked: it is random, so it reaches no one else's session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ClientIdPatterns"]


class ClientIdPatterns:
    """The configured patterns, compiled per user name on use."""

    __slots__ = ("_patterns",)

    def __init__(self, patterns: Sequence[str]) -> None:
        self._patterns = tuple(patterns)

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def allows(self, client_id: str, user: str | None) -> bool:
        """Whether ``user`` (None: anonymous) may connect as ``client_id``."""
        return any(_regex(pattern, user).fullmatch(client_id)
                   for pattern in self._patterns if user is not None or "%u" not in pattern)

    def __str__(self) -> str:
        return ", ".join(self._patterns)


def _regex(pattern: str, user: str | None) -> re.Pattern[str]:
    parts = []
    for piece in re.split(r"(%u|\*|\?)", pattern):
        if piece == "%u":
            parts.append(re.escape(user or ""))
        elif piece == "*":
            parts.append(".*")
        elif piece == "?":
            parts.append(".")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts), re.DOTALL)
