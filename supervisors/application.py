"""Run a root supervisor as an application (runtime layer; pykka + stdlib).

``Application(start_root).run()`` starts the root (usually a Supervisor) on
the running loop and returns its exit reason when it is gone. When the root
fails, which is where restart intensity escalates to in the end, it logs one
CRITICAL line naming the reason and returns: the application stops.
:func:`main` wraps that in an ``asyncio.Runner`` with SIGINT/SIGTERM
handlers and returns a process exit status. The loop is the caller's choice
(pass ``loop_factory=uvloop.new_event_loop`` in production).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

from pykka import ActorRef

from supervisors import loop_actor
from supervisors.links import actor_of, exit_future, shutdown
from supervisors.reasons import ExitReason, is_abnormal

__all__ = ["Application", "main"]

logger = logging.getLogger("supervisors")


class Application:
    """A root actor and the loop it runs on."""

    def __init__(
        self, start_root: Callable[[], ActorRef[Any]], *, name: str = "application"
    ) -> None:
        self.name = name
        self._start_root = start_root
        self._root: ActorRef[Any] | None = None
        self._lock = threading.Lock()
        self._stop_requested = False

    @property
    def root(self) -> ActorRef[Any] | None:
        """The root's ref once started."""
        return self._root

    async def run(self) -> ExitReason:
        """Start the root, wait until it exits, log how, return the reason.

        While it runs, LoopActors started from other threads use this loop.
        """
        loop = asyncio.get_running_loop()
        previous = loop_actor._default_loop
        loop_actor.use_loop(loop)
        try:
            ref = self._start_root()
            keep = actor_of(ref)  # noqa: F841 - keeps the exit reason readable
            done = exit_future(ref)
            with self._lock:
                self._root = ref
                stop_now = self._stop_requested
            if stop_now:
                shutdown(ref)
            reason = await done
        finally:
            loop_actor.use_loop(previous)
        if is_abnormal(reason):
            logger.critical(
                "%s: root %s exited (%s); stopping the application", self.name, ref, reason
            )
        else:
            logger.info("%s: root %s exited (%s)", self.name, ref, reason)
        return reason

    def stop(self) -> None:
        """Ask the root to shut down (from any thread, or a signal handler)."""
        with self._lock:
            self._stop_requested = True
            root = self._root
        if root is not None:
            shutdown(root)


def main(
    start_root: Callable[[], ActorRef[Any]],
    *,
    name: str = "application",
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
) -> int:
    """Run an application to the end; 0 after an orderly stop, 1 after a failure."""
    app = Application(start_root, name=name)
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        loop = runner.get_loop()
        for sig in signals:
            loop.add_signal_handler(sig, app.stop)
        reason = runner.run(app.run())
    return 1 if is_abnormal(reason) else 0
