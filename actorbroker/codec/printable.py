"""Codec layer: strings a peer chose, made fit for a log line. Imports the standard library only.

A client id may be 65535 bytes of anything (MQTT 5 allows every UTF-8
character, control characters included): written in full into every log
line it would multiply an attacker's bytes (500 refused CONNECTs with 64 KiB
ids once added 65 MB of log) and could forge lines. :func:`shown` quotes it
(``repr``: control characters escaped) and cuts it to a readable length; the
rest is summed up by its length and a short hash, so that two long ids that
share their start stay apart in the log and can be matched across lines.
"""

from __future__ import annotations

import hashlib

__all__ = ["SHOWN_LENGTH", "shown"]

#: Characters of a peer's string kept in a log line.
SHOWN_LENGTH = 64


def shown(text: str | None, limit: int = SHOWN_LENGTH) -> str:
    """``repr(text)``, cut after ``limit`` characters with ``…+N #hash`` for the rest."""
    if text is None or len(text) <= limit:
        return repr(text)
    digest = hashlib.blake2s(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{text[:limit]!r}…+{len(text) - limit} #{digest}"
