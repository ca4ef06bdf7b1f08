"""The per-loop queues of the loop actors' runtime (runtime layer). Imports the stdlib only.

One :class:`RunQueue` per event loop holds

* ``ready``: the mailboxes with a turn due, in the order they became ready.
  One ``loop.call_soon(run)`` per loop iteration runs the turns that were
  due when it started; turns made due meanwhile run at the next iteration,
  after the loop has polled its sockets, as separate ``call_soon`` callbacks
  would. The difference is cost: a ``call_soon`` per idle actor told (a
  uvloop handle made, queued and run) costs ~0.8 us more per message than
  appending to this deque, which is most of a delivery's runtime overhead
  when a publish fans out to many sessions that get one message each
  (``bench.delivery_floor``; the ``routes`` benchmark).
* ``items``: puts from other threads, in order, moved into their mailboxes
  (``Mailbox._put_local``) by :meth:`RunQueue.flush` on the loop thread.
* ``bulk``: the bulk lane. A turn that took longer than :data:`HEAVY_TURN`
  marks its mailbox heavy: its later turns wait here, each of as many
  messages as fit in :data:`BULK_BUDGET` at the cost of its last ones (one
  to begin with), and a run gives the lane that much time after the turns due,
  then lets the loop poll its sockets. Other loop work that comes in large
  pieces (:meth:`RunQueue.defer`: the rest of a large read, a slice of the
  registry's subscription backlog) waits in the same lane. Without it the
  ready queue is first come, first served: a client's QoS 1 round trip
  (three turns: its session, the topic actor, its session again) waited
  behind every storm client's 1,000-filter SUBSCRIBEs at each of its three
  hops, 100 ms to 2 s during a 100,000-filter storm. A heavy mailbox whose
  bulk turn is short again (under a quarter of :data:`HEAVY_TURN`) goes
  back to the ready queue (``_heavy``: 0 light, else its bulk turn's size).
  Ready turns are timed one by one only in some runs: a run that takes
  longer than :data:`HEAVY_TURN` has its next one timed, and a timed run of
  light turns only leaves the next :data:`_UNTIMED` long runs untimed, so a
  loop busy with many light turns (a fan-out to 10,000 sessions) pays one
  clock read per run, not per turn. The lane cannot starve: every run takes at least
  one job from it.

The mailboxes are duck-typed (``_turn``, ``_put_local``) so that this module
needs nothing from :mod:`supervisors.mailbox`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any

__all__ = ["BULK_BUDGET", "HEAVY_TURN", "RunQueue", "run_queue_for"]

#: Seconds: a turn longer than this makes its mailbox heavy (see the module doc).
HEAVY_TURN = 0.002
#: Seconds of bulk work per run, at most (the last job may overrun it).
BULK_BUDGET = 0.003
_MAX_BUDGET = 256  # messages per bulk turn at most: a ready turn's (mailbox._BATCH)
_UNTIMED = 16  # long runs of light turns between two timed ones


class RunQueue:
    """Turns due and cross-thread puts of the actors of one loop (see the module doc)."""

    __slots__ = ("__weakref__", "armed", "bulk", "items", "loop", "quiet", "ready")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: deque[Any] = deque()  # mailboxes with a turn due
        #: The bulk lane: heavy mailboxes (``_turn``) and deferred jobs (callables).
        self.bulk: deque[Any] = deque()
        self.armed = False  # a run is scheduled with call_soon
        #: Long runs to go before the ready turns are timed again (0: time them).
        self.quiet = 0
        self.items: deque[tuple[Any, Any]] = deque()  # (mailbox, item) from other threads

    def schedule(self, mailbox: Any) -> None:
        """On the loop thread: run ``mailbox._turn()`` at the next run (the caller
        keeps the mailbox's "scheduled" bit, so a mailbox is queued once)."""
        (self.bulk if mailbox._heavy else self.ready).append(mailbox)
        if not self.armed:
            self.armed = True
            self.loop.call_soon(self.run)

    def defer(self, job: Callable[[], None]) -> None:
        """On the loop thread: call ``job()`` in the bulk lane (see the module doc)."""
        self.bulk.append(job)
        if not self.armed:
            self.armed = True
            self.loop.call_soon(self.run)

    def run(self) -> None:
        """The turns due when this run started, then the bulk lane's share; later ones at
        the next iteration."""
        ready, bulk = self.ready, self.bulk
        try:
            last = start = perf_counter()
            if self.quiet:  # untimed: a clock read per turn costs a tenth of a light one
                for _ in range(len(ready)):
                    ready.popleft()._turn()
                last = perf_counter()
                if last - start > HEAVY_TURN:
                    self.quiet -= 1  # long: one of its turns may be heavy; time them soon
            else:
                heavy = False
                for _ in range(len(ready)):
                    mailbox = ready.popleft()
                    mailbox._turn()
                    now = perf_counter()  # one clock read per turn: the next starts now
                    if now - last > HEAVY_TURN:
                        heavy = True
                        mailbox._heavy = 1  # a message per bulk turn, to begin with
                        if ready and ready[-1] is mailbox:  # it queued its next turn itself
                            bulk.append(ready.pop())
                    last = now
                if not heavy and last - start > HEAVY_TURN:
                    self.quiet = _UNTIMED  # many light turns: time them again later
            deadline = last + BULK_BUDGET
            while bulk:
                job = bulk.popleft()
                budget = getattr(job, "_heavy", None)
                if budget is None:
                    job()
                    now = perf_counter()
                else:
                    before = job.depth()
                    job._turn(budget)
                    now = perf_counter()
                    job._heavy = _next_budget(now - last, max(1, before - job.depth()))
                if now > deadline:
                    break
                last = now
        finally:  # a turn re-raises only BaseException: keep the queue going regardless
            if ready or bulk:
                self.loop.call_soon(self.run)
            else:
                self.armed = False

    def put(self, mailbox: Any, item: Any) -> None:
        """From any thread: queue now (deque.append is atomic), flush soon."""
        self.items.append((mailbox, item))
        self.loop.call_soon_threadsafe(self.flush)

    def flush(self) -> None:
        """On the loop thread: move every item put from other threads into its mailbox."""
        items = self.items
        while items:
            try:
                mailbox, item = items.popleft()
            except IndexError:
                break
            mailbox._put_local(item)


def _next_budget(took: float, handled: int) -> int:
    """Messages for a heavy mailbox's next bulk turn: what fits in BULK_BUDGET at the
    cost per message just seen; 0 (light again) once its turns are short."""
    if took < HEAVY_TURN / 4:
        return 0
    fits = int(BULK_BUDGET * handled / took)
    if fits >= _MAX_BUDGET and took < HEAVY_TURN:
        return 0
    return max(1, min(fits, _MAX_BUDGET))


_QUEUES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, RunQueue] = (
    weakref.WeakKeyDictionary()
)
_QUEUES_LOCK = threading.Lock()


def run_queue_for(loop: asyncio.AbstractEventLoop) -> RunQueue:
    """The RunQueue of ``loop`` (one per loop)."""
    queue = _QUEUES.get(loop)
    if queue is None:
        with _QUEUES_LOCK:
            queue = _QUEUES.get(loop)
            if queue is None:
                queue = _QUEUES[loop] = RunQueue(loop)
    return queue
