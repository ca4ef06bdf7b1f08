"""Actors layer: the publishers a subscriber's session holds back, and for how long. Stdlib, ports, session, supervisors.

A ``Deliver`` carries the publisher's read credit (``ReadCredit``, see
:mod:`actorbroker.ports`): the publisher's socket is read again only
once every session its read reached has taken its hold. A session takes
it as soon as the delivery is sent or queued below the queue's high-water
mark (``OutboundQueue.pressed``); at or above the mark it *parks* the
credit, and gives every parked credit back once the queue is below the
mark again (the client acknowledged, its socket drained). So a subscriber
that is only slower slows its publishers down to its own pace instead of
overflowing its queue: while the session can hold the publisher back, the
queue admits the delivery beyond its limits (``OutboundQueue.elastic``),
and what that publisher can still send is bounded by its credit.

Bounded in time: a session that holds credits and has taken nothing out
of its queue for ``timeout`` seconds is *stuck* (a subscriber that is only
slower takes some out: the client acknowledged, its socket drained, and
the queue may take longer than that to get below the mark when many
publishers filled it at once). It checks four times per timeout, each
check armed once the previous one was handled: a check waits in the inbox
behind whatever the session had to do first, so the client's progress
(``Drained``, acknowledgements) told before it is counted, and a session
that is itself behind (a busy loop) never takes that for a stuck client. A stuck session gives every credit back,
holds nobody any more, and its limits apply again (what does not fit is
dropped, counted ``queue_full``), until the queue is below the mark. So
one stuck subscriber costs its publishers at most ``timeout`` once, and
never slows a publisher whose messages it does not get: credit is per
publisher connection. A session without a connection holds nobody (its
queue is the offline queue, with its own limits).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from actorbroker.codec import shown
from actorbroker.codec.frozen import quick_init
from actorbroker.ports import ReadCredit
from actorbroker.session.queue import OutboundQueue
from supervisors import Teller, send_after

__all__ = ["HoldExpired", "PublisherHolds"]

log = logging.getLogger("actorbroker.session")


@quick_init
@dataclass(frozen=True, slots=True)
class HoldExpired:
    """Time to check whether the session holding credits made progress (its own timer)."""


_EXPIRED = HoldExpired()
#: Checks per timeout (see the module doc).
_CHECKS = 4


class PublisherHolds:
    """The read credits one session parks (see the module doc)."""

    __slots__ = ("_client_id", "_idle", "_loop", "_metrics", "_parked", "_popped", "_queue",
                 "_owner", "_timeout", "_timer", "stuck")

    def __init__(self, client_id: str, queue: OutboundQueue, loop: Any, timeout: float,
                 metrics: Any, owner: Teller) -> None:
        self._client_id = client_id
        self._queue = queue
        self._loop = loop
        self._timeout = timeout
        self._metrics = metrics
        self._owner = owner  # the session actor's ref, told HoldExpired
        self._parked: list[ReadCredit] = []
        self._timer: Any = None
        self._popped = 0  # the queue's progress count at the last check
        self._idle = 0  # checks in a row that found no progress
        #: Held credits past the timeout and not below the mark since: holds nobody.
        self.stuck = False

    @property
    def active(self) -> bool:
        """Credits parked, or stuck: the session should say when its queue eases."""
        return bool(self._parked) or self.stuck

    def admit(self, holdable: bool) -> None:
        """A delivery with a credit comes: the queue takes it beyond its limits if the session
        can hold its publisher (``holdable``: connected, and not its own client; not stuck)."""
        self._queue.elastic = holdable and not self.stuck

    def taken(self, credit: ReadCredit, conn_id: int | None) -> None:
        """The delivery carrying ``credit`` was sent or queued for the session's connection
        ``conn_id`` (None: none attached): take or park its hold.

        Never the session's own client's credit: the acknowledgements that would
        ease the queue come through the socket the credit pauses."""
        queue = self._queue
        queue.elastic = False
        if conn_id is not None and conn_id != credit.conn_id and not self.stuck and queue.pressed:
            self._parked.append(credit)
            if self._timer is None:
                self._idle = 0
                self._popped = queue.popped
                self._arm()
        else:
            credit.take()

    def check(self) -> None:
        """The queue may have shrunk: below the mark, give everything back."""
        if not self._queue.pressed:
            self.stuck = False
            self.release()

    def expired(self) -> None:
        """The timer fired: still above the mark and nothing taken out for ``timeout``, stuck."""
        self._timer = None
        if not self._parked:
            return
        queue = self._queue
        if queue.popped != self._popped:
            self._popped = queue.popped
            self._idle = 0
        else:
            self._idle += 1
        if queue.pressed and self._idle < _CHECKS:
            self._arm()  # slow, not stuck (yet): hold on
            return
        if queue.pressed:
            self.stuck = True
            self._metrics.subscribers_stuck += 1
            log.warning("client %s: took nothing from its queue for %.1f s while holding its "
                        "publishers: releasing them; its queue limits apply",
                        shown(self._client_id), self._timeout)
        self.release()

    def _arm(self) -> None:
        self._timer = send_after(self._loop, self._owner, self._timeout / _CHECKS, _EXPIRED)

    def detached(self) -> None:
        """The connection went: an offline session holds nobody."""
        self.stuck = False
        self.release()

    def release(self) -> None:
        """Give every parked credit back (eased, stuck, detached, or the actor stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        parked, self._parked = self._parked, []
        for credit in parked:
            credit.take()
