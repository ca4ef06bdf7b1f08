"""Links, monitors and exit tracking (runtime layer; pykka + stdlib).

Every actor that can be supervised or monitored derives from
:class:`Linkable` (:class:`~supervisors.LoopActor` and
:class:`~supervisors.ThreadActor` do). It records *why* it stopped and, once
it is fully dead (``on_stop``/``on_failure`` finished, inbox drained), tells
everyone who asked:

* ``monitor(target, watcher)``: ``watcher`` receives ``Down(monitor, ref,
  reason)`` exactly once; ``demonitor`` cancels it.
* ``link(a, b)``: symmetric. When one exits, the other gets an exit signal:
  an actor with ``trap_exits = True`` receives ``Exited(ref, reason)`` in its
  inbox; otherwise an abnormal reason (not Normal/Shutdown) kills it with the
  same reason, as in Erlang. Supervisors link to their children and trap.
* ``exit_future(ref)``: a LoopFuture resolved with the exit reason.
* ``kill(ref)``: force-stop without running ``on_stop`` (Erlang's
  ``exit(Pid, kill)``).

Exit hooks run on the thread where the actor died, so they only do
thread-safe things: ``tell`` and ``LoopFuture.set``.

``tell_if_alive(ref, message)`` is the tell that every sender of this
package and above uses when the receiver may have just stopped: a dead
receiver drops the message, and the caller gets False to act on.
"""

from __future__ import annotations

import abc
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

import pykka
from pykka import ActorDeadError, ActorRef

from supervisors.future import LoopFuture
from supervisors.reasons import (
    KILLED,
    NOPROC,
    NORMAL,
    Crash,
    ExitReason,
    Killed,
    is_abnormal,
)

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "PING",
    "SHUTDOWN_REQUEST",
    "CrashRequest",
    "Down",
    "Exited",
    "Linkable",
    "Monitor",
    "Ping",
    "ShutdownRequest",
    "Teller",
    "actor_of",
    "crash",
    "demonitor",
    "exit_future",
    "kill",
    "link",
    "mailbox_depth",
    "monitor",
    "shutdown",
    "tell_if_alive",
    "unlink",
]

logger = logging.getLogger("supervisors")

ExitHook: TypeAlias = Callable[["ActorRef[Any]", ExitReason], None]

_LOCK = threading.Lock()
_ids = itertools.count(1)


# -- messages -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Monitor:
    """Handle returned by :func:`monitor`; pass it to :func:`demonitor`."""

    id: int
    target: ActorRef[Any]
    watcher: ActorRef[Any]


@dataclass(frozen=True, slots=True)
class Down:
    """Sent once to a watcher when the monitored actor has exited."""

    monitor: Monitor
    ref: ActorRef[Any]
    reason: ExitReason


@dataclass(frozen=True, slots=True)
class Exited:
    """Exit signal from a linked actor, delivered to actors that trap exits."""

    ref: ActorRef[Any]
    reason: ExitReason


@dataclass(frozen=True, slots=True)
class Ping:
    """System message: replied to with None once ``on_start`` has finished."""


@dataclass(frozen=True, slots=True)
class ShutdownRequest:
    """System message: stop like ``ref.stop()``, with exit reason Shutdown."""


@dataclass(frozen=True, slots=True)
class CrashRequest:
    """System message: raise :class:`~supervisors.errors.CrashRequestedError` (see :func:`crash`)."""

    reason: str


PING = Ping()
SHUTDOWN_REQUEST = ShutdownRequest()


# -- the mixin ----------------------------------------------------------------


class Linkable(pykka.Actor):
    """A pykka actor that reports its exit reason to monitors and links.

    Subclass :class:`~supervisors.LoopActor` or
    :class:`~supervisors.ThreadActor`, not this class.
    """

    #: Receive ``Exited`` messages instead of dying with linked actors.
    trap_exits: ClassVar[bool] = False

    # Class-level defaults keep idle actors small; set per instance when used.
    _exit_reason: ExitReason | None = None
    _stop_reason: ExitReason = NORMAL
    _exited: bool = False
    _exit_hooks: dict[int, ExitHook] | None = None
    _links: set[Linkable] | None = None
    #: The supervisor that started this actor, if any (set when it links).
    _parent: ActorRef[Any] | None = None

    def _record_exit(self, reason: ExitReason) -> None:
        """Note why we are stopping: Killed beats Crash beats an orderly stop."""
        with _LOCK:
            current = self._exit_reason
            if self._exited or isinstance(current, Killed):
                return
            if current is None or isinstance(reason, (Crash, Killed)):
                self._exit_reason = reason

    def _handle_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exception_value is not None:
            self._record_exit(Crash(exception_value))
        super()._handle_failure(exception_type, exception_value, traceback)

    @abc.abstractmethod
    def _force_exit(self, reason: ExitReason) -> None:
        """Stop now, without on_stop; implemented per runtime (thread or loop actor)."""

    def _finish_exit(self) -> None:
        """Fire links, then monitors, exactly once, after the actor is dead."""
        with _LOCK:
            if self._exited:
                return
            self._exited = True
            reason = self._exit_reason if self._exit_reason is not None else NORMAL
            self._exit_reason = reason
            hooks = self._exit_hooks
            self._exit_hooks = None
            links = self._links
            self._links = None
            for other in links or ():
                if other._links is not None:
                    other._links.discard(self)
        ref = self.actor_ref
        # The ref holds the inbox, not the actor: keep the reason readable there.
        setattr(self.actor_inbox, "exit_reason", reason)  # noqa: B010
        for other in links or ():
            other._exit_signal(ref, reason)
        for hook in (hooks or {}).values():
            try:
                hook(ref, reason)
            except Exception:
                logger.exception("exit hook of %s failed", ref)

    def _exit_signal(self, sender: ActorRef[Any], reason: ExitReason) -> None:
        if self.trap_exits:
            tell_if_alive(self.actor_ref, Exited(sender, reason))
        elif is_abnormal(reason):
            self._force_exit(KILLED if isinstance(reason, Killed) else reason)

    def _add_exit_hook(self, hook: ExitHook, key: int | None = None) -> int | None:
        """Register ``hook``; None if the actor has already exited."""
        with _LOCK:
            if self._exited:
                return None
            if key is None:
                key = next(_ids)
            if self._exit_hooks is None:
                self._exit_hooks = {}
            self._exit_hooks[key] = hook
            return key

    def _remove_exit_hook(self, key: int) -> None:
        with _LOCK:
            if self._exit_hooks is not None:
                self._exit_hooks.pop(key, None)


# -- functions ----------------------------------------------------------------


def actor_of(ref: ActorRef[Any]) -> Linkable | None:
    """The Linkable behind ``ref``; None once it has been garbage collected.

    Raises:
        TypeError: the actor is a plain pykka actor (not LoopActor/ThreadActor).
    """
    actor = ref._actor_weakref()
    if actor is None:
        return None
    if not isinstance(actor, Linkable):
        raise TypeError(
            f"{ref} is a plain pykka actor; derive it from supervisors.LoopActor"
            " or supervisors.ThreadActor to link, monitor or supervise it"
        )
    return actor


def mailbox_depth(ref: ActorRef[Any]) -> int:
    """Messages waiting in ``ref``'s inbox (an operator's figure, like Erlang's
    ``message_queue_len``); 0 for a dead actor. Exact for a LoopActor read on its
    loop; a ThreadActor's is its queue's approximate size."""
    inbox = ref.actor_inbox
    depth = getattr(inbox, "depth", None)
    if depth is not None:
        return int(depth())
    qsize = getattr(inbox, "qsize", None)
    return int(qsize()) if qsize is not None else 0


def _reason_of(actor: Linkable | None, ref: ActorRef[Any]) -> ExitReason:
    """The recorded exit reason, else NoProc."""
    if actor is not None and actor._exit_reason is not None:
        return actor._exit_reason
    reason = getattr(ref.actor_inbox, "exit_reason", None)
    return reason if reason is not None else NOPROC


class Teller(Protocol):
    """Anything told messages as an actor is: an ActorRef, or a stand-in for one."""

    def tell(self, message: Any) -> None:  # Any: pykka's ActorRef.tell takes Any
        """Put ``message`` in the inbox; raise ActorDeadError if there is none any more."""


def tell_if_alive(ref: Teller | None, message: object) -> bool:
    """Tell ``ref`` ``message``; False if ``ref`` is None or dead (ActorDeadError), else True.

    Erlang's ``Pid ! Msg`` to a dead process is dropped, not an error: a
    message to an actor that just stopped is a race every sender has, and
    the caller decides from the result whether anything else has to happen
    (count a drop, forget the ref, take a read credit back).
    """
    if ref is None:
        return False
    try:
        ref.tell(message)
    except ActorDeadError:
        return False
    return True


def monitor(target: ActorRef[Any], watcher: ActorRef[Any]) -> Monitor:
    """Send ``Down`` to ``watcher`` once, when ``target`` exits.

    If ``target`` is already dead, Down arrives at once (reason as recorded,
    or NoProc when the actor is gone).
    """
    mon = Monitor(next(_ids), target, watcher)
    actor = actor_of(target)

    def on_exit(ref: ActorRef[Any], reason: ExitReason) -> None:
        tell_if_alive(watcher, Down(mon, ref, reason))

    if actor is None or actor._add_exit_hook(on_exit, mon.id) is None:
        on_exit(target, _reason_of(actor, target))
    return mon


def demonitor(mon: Monitor) -> None:
    """Cancel a monitor; a Down already sent stays in the inbox."""
    actor = actor_of(mon.target)
    if actor is not None:
        actor._remove_exit_hook(mon.id)


def exit_future(ref: ActorRef[Any]) -> LoopFuture[ExitReason]:
    """A future resolved with the exit reason of ``ref``'s actor."""
    future: LoopFuture[ExitReason] = LoopFuture()
    actor = actor_of(ref)

    def on_exit(_ref: ActorRef[Any], reason: ExitReason) -> None:
        future.set(reason)

    if actor is None or actor._add_exit_hook(on_exit) is None:
        future.set(_reason_of(actor, ref))
    return future


def link(a: ActorRef[Any], b: ActorRef[Any]) -> None:
    """Link two actors; if one is already dead the other gets its signal now."""
    actor_a, actor_b = actor_of(a), actor_of(b)
    dead: tuple[Linkable | None, Linkable | None, ActorRef[Any]] | None = None
    with _LOCK:
        if actor_a is None or actor_a._exited:
            dead = (actor_b, actor_a, a)
        elif actor_b is None or actor_b._exited:
            dead = (actor_a, actor_b, b)
        else:
            for one, other in ((actor_a, actor_b), (actor_b, actor_a)):
                if one._links is None:
                    one._links = set()
                one._links.add(other)
    if dead is not None:
        alive, gone, gone_ref = dead
        if alive is not None and not alive._exited:
            alive._exit_signal(gone_ref, _reason_of(gone, gone_ref))


def unlink(a: ActorRef[Any], b: ActorRef[Any]) -> None:
    """Remove a link; no-op when there is none."""
    actor_a, actor_b = actor_of(a), actor_of(b)
    with _LOCK:
        for one, other in ((actor_a, actor_b), (actor_b, actor_a)):
            if one is not None and other is not None and one._links is not None:
                one._links.discard(other)


def kill(ref: ActorRef[Any], reason: ExitReason = KILLED) -> None:
    """Force-stop an actor: no on_stop, pending asks fail with ActorDeadError.

    A loop actor is killed by a callback on its own loop, so this returns
    before it is dead (await ``exit_future(ref)`` to know); an async handler in
    flight is cancelled. A thread actor is marked dead at
    once and its thread abandoned: if it is stuck in a handler it finishes
    (or not) on its own, with nobody listening.
    """
    actor = actor_of(ref)
    if actor is not None:
        actor._force_exit(reason)


def crash(ref: ActorRef[Any], reason: str) -> None:
    """Make an actor crash as a bug would: in inbox order, it raises
    ``CrashRequestedError(reason)``, so its ``on_failure`` runs (it lets go of
    what it holds) and its supervisor restarts it. Erlang's observer "kill"
    for actors whose cleanup matters; :func:`kill` skips the cleanup."""
    tell_if_alive(ref, CrashRequest(reason))


def shutdown(ref: ActorRef[Any]) -> None:
    """Ask an actor to stop with reason Shutdown (what supervisors send)."""
    tell_if_alive(ref, SHUTDOWN_REQUEST)
