"""Timers that end in a message (runtime layer; pykka + stdlib).

:func:`send_after` is Erlang's ``erlang:send_after/3``: in ``delay``
seconds, ``message`` goes into ``ref``'s inbox, and is handled there in
order like any other message, never as a callback in the middle of one. The
timer holds the ref, not the actor, so a pending timer keeps no stopped
actor alive; if the actor has stopped when it fires, the message is dropped
(:func:`~supervisors.links.tell_if_alive`). Cancel it with the handle's
``cancel()``.
"""

from __future__ import annotations

import asyncio

from supervisors.links import Teller, tell_if_alive

__all__ = ["send_after"]


def send_after(loop: asyncio.AbstractEventLoop, ref: Teller, delay: float,
               message: object) -> asyncio.TimerHandle:
    """Tell ``ref`` ``message`` in ``delay`` seconds on ``loop``; dropped if it is dead then."""
    return loop.call_later(delay, tell_if_alive, ref, message)
