"""Durability layer: from what sessions do to commit log records, and back. Stdlib, codec, routing, session, persistence, dill.

* :mod:`.journal`: session events (packets, effects, CONNECT) -> records,
  and records -> messages, Wills, subscriptions;
* :mod:`.fold`: :class:`DurableState`, the durable sessions, retained
  messages and unsent Wills folded from records (queues derived from
  ``PublishAccepted`` records); :mod:`.image`: one session of it;
* :mod:`.queue`: :class:`OffsetQueue`, a queue as log offsets (17 bytes an
  entry);
* :mod:`.restate`: a checkpoint, the state restated as records;
* :mod:`.snapshot`: HMAC-signed dill snapshots of the state.

No I/O but the snapshot files; the storage actor (actors/storage/actor.py) owns
the commit log and runs these. How it fits together: docs/storage.md,
"Durable sessions".
"""

from .fold import NEVER, DurableState, Flight, FoldPolicy, SessionImage
from .image import will_due_us
from .queue import Entry, OffsetQueue
from .restate import restate, restate_session

__all__ = [
    "NEVER",
    "DurableState",
    "Entry",
    "Flight",
    "FoldPolicy",
    "OffsetQueue",
    "SessionImage",
    "restate",
    "restate_session",
    "will_due_us",
]
