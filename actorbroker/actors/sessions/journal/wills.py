"""Actors layer: what a session actor journals about its Wills, and a Will it took back from the log. Stdlib, codec, session, durable, persistence.

One :class:`SessionWills` per :class:`~.log.LogJournal`. The
log must always tell whether a Will is still to be sent, because a broker
that restarts after a crash publishes the ones that are (actors/storage/keeper.py):

* ``WillSet`` when a CONNECT brings a Will (every session; for a clean
  session without waiting, so a crash in the group commit's few ms after
  CONNACK can lose it);
* ``WillSent`` when it is published (with its ``PublishAccepted``, before it is
  routed), written *before* the records the actor stashed (a Will published
  at an attach is the previous connection's: its ``WillSent`` must not
  cancel the new connection's ``WillSet``);
* ``WillCleared`` when a connection with a Will ends and the core neither
  published it nor started its Will Delay timer (the client sent
  DISCONNECT): without it the log would hold the Will as pending.

**A Will taken back from the log** (:meth:`SessionWills.restored`): a
session actor that loads a durable session whose connection is gone and
whose Will was not sent (it woke a hibernated session the keeper held a
Will for, or its predecessor crashed with the connection) owns that Will,
due at ``due``. A connection that resumes the session before then cancels
it ([MQTT-3.1.3-9]); one that starts clean ends the session, so the Will
goes out at once, as it does when the session expires or the time comes
with no connection (a ``RetryJournal`` tick). Should the actor hibernate
first, the Will goes to the keeper with ``Hibernated``.
"""

from __future__ import annotations

import time
from typing import Any

from actorbroker.codec import Connect
from actorbroker.durable.journal import will_of
from actorbroker.persistence.records import Record, WillCleared, WillSet
from actorbroker.session import AppMessage, Effect, EndSession, PublishWill, StartTimer
from actorbroker.session.effects import WILL_TIMER

__all__ = ["SessionWills"]


class SessionWills:
    """The Will bookkeeping of one session actor (see the module doc)."""

    __slots__ = ("_due_now", "_ending", "_open", "due", "loaded")

    def __init__(self) -> None:
        self._open = False  # the attached connection brought a Will (its WillSet is journaled)
        self._ending = False  # its connection ended: the effects that follow say what of it
        self._due_now = False
        self.loaded: WillSet | None = None
        self.due = 0.0  # seconds since the epoch

    def restored(self, will: WillSet | None, due: float) -> float | None:
        """A Will taken back from the log, due at ``due``; seconds until then (None: no Will)."""
        self.loaded, self.due = will, due
        return None if will is None else max(0.0, due - time.time())

    def attached(self, connect: Connect) -> None:
        """A connection attached: a loaded Will goes now (clean start, or overdue) or never."""
        self._open = connect.will is not None
        self._ending = False
        if self.loaded is not None:
            if connect.clean_start or time.time() >= self.due:
                self._due_now = True
            else:
                self.loaded = None

    def detached(self) -> None:
        self._ending = True

    def tick(self) -> bool:
        """The time of a loaded Will may have come: True if it is to be published now."""
        if self.loaded is not None and time.time() >= self.due:
            self._due_now = True
        return self._due_now

    def hand_over(self) -> tuple[WillSet | None, float]:
        """The loaded Will and its due time, for the keeper (the actor hibernates)."""
        will, self.loaded = self.loaded, None
        return will, self.due

    def inject(self, effects: list[Effect], client_id: str, now: float) -> list[Effect]:
        """``effects``, after publishing a loaded Will that is due (or whose session ends)."""
        will = self.loaded
        if will is None or not (self._due_now or any(type(e) is EndSession for e in effects)):
            return effects
        self.loaded, self._due_now = None, False
        message = AppMessage.from_will(will_of(will), publisher=client_id, received_at=now)
        return [PublishWill(message), *effects]

    def cleared(self, effects: list[Any], client_id: str, ts: int) -> Record | None:
        """``WillCleared`` when the connection that just ended discarded its Will."""
        if not self._ending:
            return None
        self._ending = False
        had, self._open = self._open, False
        if not had or any(type(e) is PublishWill or (type(e) is StartTimer
                                                     and e.name == WILL_TIMER) for e in effects):
            return None
        return WillCleared(client_id, timestamp_us=ts)
