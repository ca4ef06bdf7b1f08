"""LoopActor: a pykka actor whose inbox and message loop run on an asyncio loop.

Runtime layer; imports pykka and the stdlib only (any asyncio loop: uvloop in
production, the default loop in most tests). The scheduling lives in
:mod:`supervisors.mailbox`; this module is the pykka face of it.

Stop semantics (as pykka's): ``ref.stop()`` sends pykka's stop message,
handled in inbox order; ``on_stop`` runs (awaited if async), the stop future
resolves, then messages still queued fail with ActorDeadError. On the loop,
``await ref.stop(block=False)``; from other threads ``ref.stop()`` blocks as
usual; a blocking ``ref.stop()`` *on* the loop raises BlockingOnLoopError
(the stop request is still delivered). ``kill(ref)`` force-stops.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import uuid
from _thread import get_ident
from collections.abc import Callable, Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pykka import ActorDeadError, ActorRef, ActorRegistry
from pykka._introspection import get_attr_directly
from pykka.messages import ProxyCall, ProxyGetAttr, ProxySetAttr, _ActorStop

from supervisors import registry
from supervisors.errors import CrashRequestedError, NoEventLoopError
from supervisors.future import LoopFuture
from supervisors.links import CrashRequest, Linkable, Ping, ShutdownRequest
from supervisors.mailbox import Mailbox, StopFlag, _guard
from supervisors.reasons import SHUTDOWN, ExitReason

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["LoopActor", "LoopActorRef", "StopFlag", "use_loop"]

_get_running_loop = asyncio._get_running_loop
_default_loop: asyncio.AbstractEventLoop | None = None
# Actor URNs: one random (version 4) UUID per process whose last 48 bits are replaced
# by a serial number: unique in the process, as pykka's registry needs, and ten
# times cheaper than uuid.uuid4() per actor (os.urandom is a syscall).
_URN_PREFIX = uuid.uuid4().urn[:-12]
_urn_serials = itertools.count(1)

registry.install()


def use_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Set the loop for LoopActors started off any loop thread (None: unset).

    Actors started on a loop thread always use the running loop.
    """
    global _default_loop
    _default_loop = loop


class _StopReply(LoopFuture[bool]):
    """The reply to a stop, converted as pykka's ``stop()`` converts it.

    The actor replies None to a stop it handled (or that was queued when it
    died): True. An ActorDeadError means it was dead already: False.
    """

    __slots__ = ()

    def set(self, value: Any | None = None) -> None:
        super().set(True if value is None else value)

    def set_exception(self, exc_info: Any | None = None) -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        if isinstance(exc_info[1], ActorDeadError):
            super().set(False)
        else:
            super().set_exception(exc_info)


_STOP = _ActorStop()
A = TypeVar("A", bound="LoopActor")


class LoopActorRef(ActorRef[A]):
    """pykka's ActorRef with a shorter ``tell``/``ask`` path for loop actors.

    Same semantics as ``pykka.ActorRef`` (raise ActorDeadError on tell to a
    dead actor, fail the future of an ask); it only skips pykka's Envelope and
    a few calls, which is most of the cost of a tell.
    """

    actor_inbox: Mailbox

    def tell(self, message: Any) -> None:
        mailbox = self.actor_inbox
        if mailbox.flag._is_set:
            raise ActorDeadError(f"{self} not found")
        # Mailbox.put_item, inlined: this is the hottest path of the runtime.
        runq = mailbox._runq
        if get_ident() == mailbox._tid:
            if runq.items:
                runq.flush()
            mailbox._next.append((message, None))
            if not mailbox._scheduled:
                mailbox._scheduled = True
                # RunQueue.schedule, inlined too
                (runq.bulk if mailbox._heavy else runq.ready).append(mailbox)
                if not runq.armed:
                    runq.armed = True
                    mailbox.loop.call_soon(runq.run)
        else:
            runq.put(mailbox, (message, None))

    @overload
    def ask(
        self, message: Any, *, block: Literal[False], timeout: float | None = None
    ) -> LoopFuture[Any]: ...

    @overload
    def ask(
        self, message: Any, *, block: Literal[True], timeout: float | None = None
    ) -> Any: ...

    @overload
    def ask(
        self, message: Any, *, block: bool = True, timeout: float | None = None
    ) -> Any | LoopFuture[Any]: ...

    def ask(
        self, message: Any, *, block: bool = True, timeout: float | None = None
    ) -> Any | LoopFuture[Any]:
        future: LoopFuture[Any] = LoopFuture()
        mailbox = self.actor_inbox
        if mailbox.flag._is_set:
            error = ActorDeadError(f"{self} not found")
            future.set_exception((ActorDeadError, error, None))
        else:
            mailbox.put_item((message, future))
        if block:
            return future.get(timeout=timeout)
        return future

    @overload
    def stop(self, *, block: Literal[True], timeout: float | None = None) -> bool: ...

    @overload
    def stop(
        self, *, block: Literal[False], timeout: float | None = None
    ) -> LoopFuture[bool]: ...

    @overload
    def stop(
        self, *, block: bool = True, timeout: float | None = None
    ) -> bool | LoopFuture[bool]: ...

    def stop(
        self, *, block: bool = True, timeout: float | None = None
    ) -> bool | LoopFuture[bool]:
        """pykka's stop (True: stopped by us or already stopping; False: was dead).

        The non-blocking future is a plain LoopFuture, cheap to await.
        """
        stopped = _StopReply()
        mailbox = self.actor_inbox
        if mailbox.flag._is_set:
            stopped.set(False)
        else:
            mailbox.put_item((_STOP, stopped))
        if block:
            return stopped.get(timeout=timeout)
        return stopped



def _stop(actor: LoopActor, _message: object) -> Any:
    return actor._stop()


def _shutdown(actor: LoopActor, _message: object) -> Any:
    actor._stop_reason = SHUTDOWN
    return actor._stop()


def _ping(_actor: LoopActor, _message: object) -> None:
    return None


def _crash(_actor: LoopActor, message: CrashRequest) -> None:
    raise CrashRequestedError(message.reason)


def _call(actor: LoopActor, message: ProxyCall) -> Any:
    return get_attr_directly(actor, message.attr_path)(*message.args, **message.kwargs)


def _getattr(actor: LoopActor, message: ProxyGetAttr) -> Any:
    return get_attr_directly(actor, message.attr_path)


def _setattr(actor: LoopActor, message: ProxySetAttr) -> None:
    parent = get_attr_directly(actor, message.attr_path[:-1])
    setattr(parent, message.attr_path[-1], message.value)


_SYSTEM: dict[type, Callable[[LoopActor, Any], Any]] = {
    _ActorStop: _stop,
    ShutdownRequest: _shutdown,
    Ping: _ping,
    CrashRequest: _crash,
    ProxyCall: _call,
    ProxyGetAttr: _getattr,
    ProxySetAttr: _setattr,
}


class LoopActor(Linkable):
    """A pykka actor that runs on an asyncio event loop, not on a thread.

    Use it like ``pykka.ThreadingActor``: ``MyActor.start(...)`` returns an
    ``ActorRef``; ``tell``, ``ask``, proxies and the registry work. In
    addition, ``on_receive``, proxied methods, ``on_start``, ``on_stop`` and
    ``on_failure`` may be ``async def``. Never block in a handler: the loop
    runs every loop actor. ``ask``/``get`` results are awaited, never
    ``get()``-ed, on the loop.

    The actor binds to the running loop when started on a loop thread, else
    to the loop given to :func:`use_loop`.
    """

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        # What pykka.Actor.__init__ does, with a StopFlag instead of an Event
        # (tests/supervisors/test_pykka_pin.py keeps the two in step).
        running = _get_running_loop()  # a getpid() syscall each: once per actor
        loop = running or _default_loop
        if loop is None:
            raise NoEventLoopError(
                f"{type(self).__name__} started outside an event loop thread and"
                " no loop was set: call supervisors.use_loop(loop) first"
            )
        self.actor_urn = f"{_URN_PREFIX}{next(_urn_serials):012x}"
        self.actor_stopped = flag = StopFlag()
        self.actor_inbox = self._mailbox = Mailbox(self, loop, flag, on_loop=running is loop)
        self._actor_ref = LoopActorRef(self)

    @property
    def actor_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop this actor runs on (for timers: ``call_later``)."""
        return self._mailbox.loop

    @staticmethod
    def _create_actor_inbox() -> Mailbox:
        # Only pykka's Actor.__init__ calls this, and LoopActor replaces it.
        raise TypeError("a LoopActor's Mailbox is made in LoopActor.__init__")

    @staticmethod
    def _create_future() -> LoopFuture[Any]:
        return LoopFuture()

    def _start_actor_loop(self) -> None:
        mailbox = self._mailbox
        if get_ident() == mailbox._tid:
            mailbox.loop.call_soon(mailbox._boot)
        else:
            mailbox.loop.call_soon_threadsafe(mailbox._boot)

    def _handle_receive(self, message: Any) -> Any:
        system = _SYSTEM.get(message.__class__)
        if system is None:
            return self.on_receive(message)
        return system(self, message)

    def _stop(self) -> Coroutine[Any, Any, None] | None:  # type: ignore[override]
        """Unregister, mark stopped, run on_stop (its coroutine, if async)."""
        ActorRegistry.unregister(self.actor_ref)
        self.actor_stopped.set()
        self._record_exit(self._stop_reason)
        try:
            result = self.on_stop()
        except Exception:
            self._handle_failure(*sys.exc_info())
            return None
        if result.__class__ is CoroutineType:
            return _guard(self, result)
        return None

    def _force_exit(self, reason: ExitReason) -> None:
        mailbox = self._mailbox
        if get_ident() == mailbox._tid:
            mailbox.loop.call_soon(mailbox._kill, reason)
        else:
            mailbox.loop.call_soon_threadsafe(mailbox._kill, reason)

    # Hooks may be coroutines on a loop actor.
    def on_start(self) -> Coroutine[Any, Any, None] | None:  # type: ignore[override]
        """Run before the first message; may be ``async def``."""
        return None

    def on_stop(self) -> Coroutine[Any, Any, None] | None:  # type: ignore[override]
        """Run on an orderly stop; may be ``async def``."""
        return None

    def on_failure(  # type: ignore[override]
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Coroutine[Any, Any, None] | None:
        """Run after a crash in a told message's handler; may be ``async def``."""
        return None
