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
  (``bench.delivery_floor``; issue 7's ``routes``).
* ``items``: puts from other threads, in order, moved into their mailboxes
  (``Mailbox._put_local``) by :meth:`RunQueue.flush` on the loop thread.

The mailboxes are duck-typed (``_turn``, ``_put_local``) so that this module
needs nothing from :mod:`supervisors.mailbox`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from typing import Any

__all__ = ["RunQueue", "run_queue_for"]


class RunQueue:
    """Turns due and cross-thread puts of the actors of one loop (see the module doc)."""

    __slots__ = ("__weakref__", "armed", "items", "loop", "ready")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: deque[Any] = deque()  # mailboxes with a turn due
        self.armed = False  # a run is scheduled with call_soon
        self.items: deque[tuple[Any, Any]] = deque()  # (mailbox, item) from other threads

    def schedule(self, mailbox: Any) -> None:
        """On the loop thread: run ``mailbox._turn()`` at the next run (the caller
        keeps the mailbox's "scheduled" bit, so a mailbox is queued once)."""
        self.ready.append(mailbox)
        if not self.armed:
            self.armed = True
            self.loop.call_soon(self.run)

    def run(self) -> None:
        """The turns due when this run started; later ones at the next iteration."""
        ready = self.ready
        try:
            for _ in range(len(ready)):
                ready.popleft()._turn()
        finally:  # a turn re-raises only BaseException: keep the queue going regardless
            if ready:
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
