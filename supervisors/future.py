"""LoopFuture: a pykka Future that is awaitable on any asyncio loop.

Runtime layer; imports pykka and the stdlib only. One future class serves both
worlds:

* loop code ``await``\\ s it; the awaiting task resumes on its own loop, also
  when the value is set from another thread (``call_soon_threadsafe``);
* other threads call ``get()``, which blocks on a private event;
* ``get()`` on an event loop thread raises :class:`BlockingOnLoopError` unless
  the value is already there, instead of stalling the loop.

Futures made by pykka's ``map``/``join``/``filter``/``reduce`` and by
``ActorRef.stop`` carry a *get hook*. Awaiting such a future replays the hook:
each ``get()`` of a LoopFuture inside the hook that is not ready raises
:class:`BlockingOnLoopError` naming that future, which is awaited before the
hook is run again. Hooks over ``ThreadingFuture``\\ s still block; do not await
them on the loop.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from _thread import get_ident
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

from pykka import ActorDeadError, Future, Timeout
from pykka._future import _Unset

from supervisors.errors import BlockingOnLoopError

if TYPE_CHECKING:
    from pykka._types import OptExcInfo

__all__ = ["LoopFuture"]

T = TypeVar("T")

# One lock for every future: set/await/get races are rare and short, and a
# shared lock keeps a future small (no Condition per ask, unlike ThreadingFuture).
_LOCK = threading.Lock()
_UNSET = _Unset()
_get_running_loop = asyncio._get_running_loop


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class LoopFuture(Future[T]):
    """Thread-safe, awaitable implementation of :class:`pykka.Future`."""

    # Slots (pykka's Future has none, but never needing the instance dict
    # saves an allocation per ask, which the garbage collector notices).
    __slots__ = ("_abandoned", "_callbacks", "_get_hook", "_get_hook_result", "_result")

    # (value, exc_info) once resolved
    _result: tuple[Any, OptExcInfo | None] | None
    _callbacks: list[Callable[[], None]] | None
    _abandoned: bool

    def __init__(self) -> None:
        # Not calling Future.__init__: it allocates an _Unset per future.
        self._get_hook = None
        self._get_hook_result = _UNSET
        self._result = None
        self._callbacks = None
        self._abandoned = False

    def __repr__(self) -> str:
        state = "pending" if self._result is None else "done"
        return f"<supervisors.LoopFuture {state}>"

    def done(self) -> bool:
        """True once a value or an exception is set."""
        return self._result is not None

    # -- reading ---------------------------------------------------------------

    def get(self, *, timeout: float | None = None) -> T:
        """Return the value (or raise the exception); see the module docstring.

        Raises:
            BlockingOnLoopError: called on an event loop thread, not ready yet.
            pykka.Timeout: ``timeout`` seconds passed without a value.
        """
        if self._get_hook is not None:
            return super().get(timeout=timeout)
        result = self._result
        if result is None:
            if _get_running_loop() is not None:
                raise BlockingOnLoopError(self)
            result = self._block(timeout)
        value, exc_info = result
        if exc_info is not None:
            _raise(exc_info)
        return value  # type: ignore[no-any-return]

    def _block(self, timeout: float | None) -> tuple[Any, OptExcInfo | None]:
        event = threading.Event()
        with _LOCK:
            if self._result is None:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(event.set)
        if not event.wait(timeout):
            result = self._result
            if result is None:
                raise Timeout(f"{timeout} seconds")
        assert self._result is not None
        return self._result

    def __await__(self) -> Generator[Any, None, T]:
        while self._get_hook is not None:
            try:
                return self.get()
            except BlockingOnLoopError as err:
                pending = err.future
                if not isinstance(pending, LoopFuture) or pending is self:
                    raise
                yield from pending._wait_on_loop()
        if self._result is None:
            yield from self._wait_on_loop()
        return self.get()

    __iter__ = __await__

    def _wait_on_loop(self) -> Generator[Any, None, None]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        loop_thread = get_ident()

        def wake() -> None:
            if get_ident() == loop_thread:
                _wake(waiter)
            else:
                loop.call_soon_threadsafe(_wake, waiter)

        with _LOCK:
            if self._result is not None:
                return
            if self._callbacks is None:
                self._callbacks = []
            self._callbacks.append(wake)
        yield from waiter.__await__()

    def add_done_callback(self, callback: Callable[[LoopFuture[T]], None]) -> None:
        """Call ``callback(self)`` once set: now if done, else on the setter's thread."""
        with _LOCK:
            if self._result is None:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(lambda: callback(self))
                return
        callback(self)

    # -- writing ---------------------------------------------------------------

    def set(self, value: Any | None = None) -> None:
        """Set the value; raises ``queue.Full`` if already set (as pykka does)."""
        self._resolve((value, None))

    def set_exception(self, exc_info: OptExcInfo | None = None) -> None:
        """Set an exception (default: the one being handled, ``sys.exc_info()``)."""
        if exc_info is None:
            exc_info = sys.exc_info()
        self._resolve((None, exc_info))

    def set_get_hook(self, func: Callable[[float | None], T]) -> None:
        """Compute the value with ``func(timeout)`` on first ``get()``."""
        with _LOCK:
            if self._result is not None:
                raise queue.Full
            self._get_hook = func

    def abandon(self, message: str) -> None:
        """Fail with ActorDeadError unless already set, and ignore later sets.

        Used when an actor is force-stopped while this reply is in flight: the
        abandoned thread that may still finish the handler must not crash on
        ``set()``.
        """
        exc = ActorDeadError(message)
        with _LOCK:
            self._abandoned = True
            if self._result is not None:
                return
        self._resolve((None, (ActorDeadError, exc, None)), force=True)

    def _resolve(
        self, result: tuple[Any, OptExcInfo | None], *, force: bool = False
    ) -> None:
        with _LOCK:
            if self._abandoned and not force:
                return
            if self._result is not None or self._get_hook is not None:
                raise queue.Full
            self._result = result
            callbacks = self._callbacks
            self._callbacks = None
        if callbacks is not None:
            for callback in callbacks:
                callback()


def _raise(exc_info: OptExcInfo) -> None:
    exc_type, exc_value, exc_traceback = exc_info
    assert exc_type is not None
    if exc_value is None:
        exc_value = exc_type()
    if exc_value.__traceback__ is not exc_traceback:
        raise exc_value.with_traceback(exc_traceback)
    raise exc_value
