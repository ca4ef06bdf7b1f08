"""ThreadActor: pykka's ThreadingActor, supervisable (runtime layer; pykka + stdlib).

For actors that block (disk, etcd client, Spark): one OS thread each, as in
pykka. What it adds to ``pykka.ThreadingActor``:

* it reports its exit reason to links and monitors, so it can be a child of
  a (loop) supervisor next to loop actors;
* its futures are :class:`~supervisors.LoopFuture`: loop code can ``await
  ref.ask(msg, block=False)`` without blocking the loop;
* ``kill`` marks it dead at once and *abandons* its thread: a handler stuck
  in a blocking call keeps its thread until the call returns, then the
  thread sees it is stopped and exits. Threads are daemons by default so an
  abandoned one cannot hold the process open.
"""

from __future__ import annotations

import queue
from typing import Any, ClassVar

import pykka
from pykka import ActorRegistry
from pykka._envelope import Envelope
from pykka.messages import _ActorStop

from supervisors.future import LoopFuture
from supervisors.errors import CrashRequestedError
from supervisors.links import CrashRequest, Linkable, Ping, ShutdownRequest
from supervisors.reasons import SHUTDOWN, ExitReason

__all__ = ["ThreadActor"]


class _Wake:
    """Put in the inbox of a killed thread actor so a blocked get() returns."""


_WAKE = _Wake()


class _TrackingQueue(queue.Queue[Envelope[Any]]):
    """pykka's inbox queue, remembering the envelope being handled."""

    in_flight: Envelope[Any] | None = None
    exit_reason: ExitReason | None = None  # set by Linkable on exit

    def get(self, block: bool = True, timeout: float | None = None) -> Envelope[Any]:
        envelope = super().get(block, timeout)
        self.in_flight = envelope
        return envelope


class ThreadActor(Linkable, pykka.ThreadingActor):
    """A ``pykka.ThreadingActor`` that links, monitors and can be supervised."""

    use_daemon_thread: ClassVar[bool] = True

    @staticmethod
    def _create_actor_inbox() -> _TrackingQueue:
        return _TrackingQueue()

    @staticmethod
    def _create_future() -> LoopFuture[Any]:
        return LoopFuture()

    def _handle_receive(self, message: Any) -> Any:
        kind = message.__class__
        if kind is Ping or kind is _Wake:
            return None
        if kind is ShutdownRequest:
            self._stop_reason = SHUTDOWN
            return self._stop()
        if kind is CrashRequest:
            raise CrashRequestedError(message.reason)
        return super()._handle_receive(message)

    def _stop(self) -> None:
        self._record_exit(self._stop_reason)
        super()._stop()

    def _actor_loop(self) -> None:
        try:
            super()._actor_loop()
        finally:
            self._finish_exit()

    def _force_exit(self, reason: ExitReason) -> None:
        self._record_exit(reason)
        ActorRegistry.unregister(self.actor_ref)
        self.actor_stopped.set()
        message = f"{self.actor_ref} was killed before replying"
        inbox = self.actor_inbox
        assert isinstance(inbox, _TrackingQueue)
        in_flight = inbox.in_flight
        if in_flight is not None and isinstance(in_flight.reply_to, LoopFuture):
            in_flight.reply_to.abandon(message)
        while True:
            try:
                envelope = queue.Queue.get(inbox, block=False)
            except queue.Empty:
                break
            reply = envelope.reply_to
            if isinstance(reply, LoopFuture):
                if isinstance(envelope.message, (ShutdownRequest, _ActorStop)):
                    reply.set(None)
                else:
                    reply.abandon(message)
        inbox.put(Envelope(_WAKE))
        self._finish_exit()
