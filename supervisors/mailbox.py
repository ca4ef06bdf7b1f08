"""The mailbox of a LoopActor: inbox, scheduler, death (runtime layer).

Imports pykka, the stdlib and :mod:`supervisors.runqueue`. No thread and no
task per actor: each actor has a :class:`Mailbox` holding ``(message,
reply)`` items and a "turn scheduled" bit. A put on the loop thread appends
and, if the actor is idle, queues the mailbox on the loop's run queue, which
runs its *turn* at the next loop iteration; from any other thread it hops
over with ``call_soon_threadsafe``. A turn handles up to ``_BATCH`` messages,
then yields the loop (the mailbox queues itself again). A handler (or ``on_start``/``on_stop``/``on_failure``)
that returns a coroutine suspends the actor: the coroutine runs as a task and
the actor takes its next message only when it is done, so handling stays
sequential per actor.

Which thread is the loop's is checked with ``threading.get_ident`` (~50 ns),
not ``asyncio._get_running_loop`` (~200 ns on 3.11): a loop actor assumes its
loop keeps running on the thread it first ran on.

Puts from other threads go through the run queue's ``items``, which
every put on the loop thread flushes first: causal order holds across threads
(if a thread tells A and then resolves a future, a coroutine woken by that
future and telling the same actor B queues B after A).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sys
import threading
from _thread import get_ident
from collections.abc import Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any, TypeAlias

from pykka import ActorDeadError, ActorRegistry, Future
from pykka._envelope import Envelope
from pykka.messages import _ActorStop

from supervisors.errors import BlockingOnLoopError
from supervisors.links import Linkable, ShutdownRequest
from supervisors.reasons import ExitReason
from supervisors.runqueue import run_queue_for

if TYPE_CHECKING:
    from supervisors.loop_actor import LoopActor

__all__ = ["Mailbox", "StopFlag"]

logger = logging.getLogger("supervisors")

_BATCH = 256  # messages per turn before yielding the loop
_get_running_loop = asyncio._get_running_loop
_FLAG_COND = threading.Condition(threading.Lock())
# An inbox item: what pykka puts in an Envelope, as a cheaper tuple.
_Item: TypeAlias = "tuple[Any, Future[Any] | None]"
_NO_BATCH: list[_Item] = []  # shared, never mutated
_STOPS = (_ActorStop, ShutdownRequest)


class StopFlag(threading.Event):
    """pykka's ``actor_stopped`` without a Condition per actor (~1.5 KiB).

    Waiters share one module-level condition; ``set`` only touches it when
    someone waits, which nobody does in the common case.
    """

    def __init__(self) -> None:  # no super().__init__(): that allocates the Condition
        self._is_set = False
        self._waiters = 0

    def is_set(self) -> bool:
        return self._is_set

    isSet = is_set

    def set(self) -> None:
        self._is_set = True
        if self._waiters:
            with _FLAG_COND:
                _FLAG_COND.notify_all()

    def clear(self) -> None:
        self._is_set = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._is_set:
            return True
        if _get_running_loop() is not None:
            raise BlockingOnLoopError(None)
        with _FLAG_COND:
            self._waiters += 1
            try:
                return _FLAG_COND.wait_for(lambda: self._is_set, timeout)
            finally:
                self._waiters -= 1


async def _guard(actor: Linkable, hook: Coroutine[Any, Any, Any]) -> None:
    """Run an async lifecycle hook; a failure stops the actor as in pykka."""
    try:
        await hook
    except Exception:
        actor._handle_failure(*sys.exc_info())


def _settle_dead(item: _Item, name: str) -> None:
    message, reply = item
    if reply is None:
        return
    try:
        if isinstance(message, _STOPS):
            reply.set(None)
        else:
            error = ActorDeadError(f"{name} stopped before handling the message")
            reply.set_exception((ActorDeadError, error, None))
    except queue.Full:
        pass


class Mailbox:
    """Inbox and scheduler of one LoopActor (pykka's ActorInbox protocol).

    Items are ``(message, reply_future)`` tuples, not pykka Envelopes: a tuple
    is ~5x cheaper to make. ``put``/``get`` convert for pykka's protocol.
    """

    __slots__ = (
        "_cur",
        "_epitaph",
        "_heavy",
        "_runq",
        "_inflight",
        "_next",
        "_pos",
        "_scheduled",
        "_task",
        "_tid",
        "actor",
        "exit_reason",
        "flag",
        "loop",
    )

    def __init__(self, actor: LoopActor, loop: asyncio.AbstractEventLoop, flag: StopFlag,
                 *, on_loop: bool | None = None) -> None:
        self.actor: LoopActor | None = actor  # None once dead
        self.loop = loop
        self.flag = flag
        self._cur = _NO_BATCH  # batch being handled, from index _pos
        self._pos = 0
        self._next: list[_Item] = []  # arrivals since the batch was taken
        self._scheduled = True  # a turn is pending/running/suspended; boot clears
        self._task: asyncio.Task[Any] | None = None
        self._inflight: _Item | None = None  # item whose handler is the task
        self._epitaph = ""
        self._runq = run_queue_for(loop)
        self._heavy = 0  # > 0: its turns, of that many messages, wait in the bulk lane (runqueue.py)
        self.exit_reason: ExitReason | None = None  # set by Linkable on exit
        # Thread running ``loop``: a put from it needs no thread-safe hop.
        # Known at once when created on the loop, else from the first turn.
        # (threading.get_ident is ~4x cheaper than asyncio._get_running_loop.)
        # ``on_loop``: whether ``loop`` runs this thread, if the caller knows.
        if on_loop is None:
            on_loop = _get_running_loop() is loop
        self._tid = get_ident() if on_loop else 0

    # -- ActorInbox protocol ---------------------------------------------------

    def put(self, envelope: Envelope[Any], /) -> None:
        self.put_item((envelope.message, envelope.reply_to))

    def get(self) -> Envelope[Any]:
        if self._pos >= len(self._cur):
            if not self._next:
                raise queue.Empty
            self._cur, self._next, self._pos = self._next, [], 0
        self._pos += 1
        return Envelope(*self._cur[self._pos - 1])

    def empty(self) -> bool:
        return self._pos >= len(self._cur) and not self._next

    def depth(self) -> int:
        """Messages waiting, the one being handled excluded (read on the loop thread)."""
        return len(self._cur) - self._pos + len(self._next)

    # -- scheduling -------------------------------------------------------------

    def put_item(self, item: _Item) -> None:
        """Queue ``(message, reply)``; from any thread."""
        runq = self._runq
        if get_ident() == self._tid:
            if runq.items:
                runq.flush()  # earlier puts from other threads go first
            self._next.append(item)
            if not self._scheduled:
                self._scheduled = True
                runq.schedule(self)
        else:
            runq.put(self, item)

    def _put_local(self, item: _Item) -> None:
        if self.actor is None:
            _settle_dead(item, self._epitaph)
            return
        self._next.append(item)
        if not self._scheduled:
            self._scheduled = True
            self._runq.schedule(self)

    def _boot(self) -> None:
        self._tid = get_ident()
        actor = self.actor
        if actor is None:
            return
        try:
            result = actor.on_start()
        except Exception:
            actor._handle_failure(*sys.exc_info())
            self._teardown()
            return
        if result.__class__ is CoroutineType:
            self._suspend(_guard(actor, result), None)
        elif self.flag._is_set:
            self._teardown()
        else:
            self._turn()

    def _turn(self, budget: int = _BATCH) -> None:
        actor = self.actor
        if actor is None:
            self._drain()
            return
        flag = self.flag
        cur, pos = self._cur, self._pos
        while budget:
            if pos >= len(cur):
                cur = self._next
                if not cur:
                    self._cur, self._pos, self._scheduled = _NO_BATCH, 0, False
                    return
                self._next = []
                pos = 0
            item = cur[pos]
            pos += 1
            budget -= 1
            try:
                result = actor._handle_receive(item[0])
            except Exception:
                self._cur, self._pos = cur, pos
                if not self._failed(item[1], sys.exc_info()):
                    return
                result = None
                item = (None, None)
            except BaseException:
                self._cur, self._pos = cur, pos
                actor._handle_failure(*sys.exc_info())
                self._teardown()
                raise
            if result.__class__ is CoroutineType:
                self._cur, self._pos = cur, pos
                self._suspend(result, item)
                return
            if item[1] is not None:
                try:
                    item[1].set(result)
                except queue.Full:
                    pass
            if flag._is_set:
                self._cur, self._pos = cur, pos
                self._teardown()
                return
        self._cur, self._pos = cur, pos
        self._runq.schedule(self)  # budget spent: the rest after the loop's next poll

    def _failed(self, reply: Future[Any] | None, exc_info: Any) -> bool:
        """A handler raised: reply to an ask and go on, or crash on a tell."""
        actor = self.actor
        assert actor is not None
        if reply is not None:
            logger.info("Exception returned from %s to caller:", actor, exc_info=exc_info)
            try:
                reply.set_exception(exc_info)
            except queue.Full:
                pass
            return True
        actor._handle_failure(*exc_info)
        try:
            result = actor.on_failure(*exc_info)
        except Exception:
            actor._handle_failure(*sys.exc_info())
            result = None
        if result.__class__ is CoroutineType:
            self._suspend(_guard(actor, result), None)
        else:
            self._teardown()
        return False

    def _suspend(self, coro: Coroutine[Any, Any, Any], item: _Item | None) -> None:
        task = self.loop.create_task(coro)
        self._task, self._inflight = task, item
        task.add_done_callback(self._resume)

    def _resume(self, task: asyncio.Task[Any]) -> None:
        if task is not self._task:  # killed meanwhile
            return
        item, self._task, self._inflight = self._inflight, None, None
        reply = item[1] if item is not None else None
        exc = asyncio.CancelledError() if task.cancelled() else task.exception()
        if exc is not None:
            if not self._failed(reply, (type(exc), exc, exc.__traceback__)):
                return
        elif reply is not None:
            try:
                reply.set(task.result())
            except queue.Full:
                pass
        if self.flag._is_set:
            self._teardown()
        else:
            self._turn()

    # -- death ------------------------------------------------------------------

    def _kill(self, reason: ExitReason) -> None:
        actor = self.actor
        if actor is None:
            return
        actor._record_exit(reason)
        ActorRegistry.unregister(actor.actor_ref)
        self.flag.set()
        task, item = self._task, self._inflight
        self._task = self._inflight = None
        if task is not None:
            task.cancel()
        if item is not None:
            _settle_dead(item, str(actor.actor_ref))
        self._teardown()

    def _teardown(self) -> None:
        actor = self.actor
        if actor is None:
            return
        self.actor = None  # break the actor <-> mailbox cycle
        self._epitaph = str(actor.actor_ref)
        self._drain()
        actor._finish_exit()

    def _drain(self) -> None:
        pending = self._cur[self._pos :] + self._next
        self._cur, self._pos, self._next = _NO_BATCH, 0, []
        self._scheduled = False
        for item in pending:
            _settle_dead(item, self._epitaph)
