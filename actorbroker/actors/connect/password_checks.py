"""Actors layer: password hashes checked off the event loop. Stdlib only.

A Mosquitto 2.1 ``$argon2id$`` entry costs about 90 ms of CPU to check,
a ``$7$`` one with 1,000 PBKDF2 rounds about 1 ms; on the loop thread each
check stalls every connection of the node for that long, and a guesser
with a few sockets stalls it all the time. Both hash functions release the
GIL (argon2-cffi calls into C, ``hashlib.pbkdf2_hmac`` too), so a check on
another thread costs the loop nothing.

One worker thread, not a pool: checks finish in the order they were asked,
so two CONNECTs of one client id reach their session in the order they
came ([MQTT-3.1.4-2]: the later takes the earlier over), and a flood of
guesses costs one core at most, as it does in Mosquitto, whose checks
block its only thread. The answer comes back on the loop
(``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["PasswordChecks"]

log = logging.getLogger("actorbroker.auth")


class PasswordChecks:
    """Runs ``check(user, password)`` on one worker thread; answers on the loop."""

    __slots__ = ("_loop", "_pool")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="password-checks")

    def check(self, check: Callable[[str, bytes], bool], user: str, password: bytes,
              then: Callable[[bool], None]) -> None:
        """Call ``then(ok)`` on the loop once ``check(user, password)`` ran (False if it raised)."""
        future = self._pool.submit(check, user, password)
        future.add_done_callback(lambda done: self._answer(done, user, then))

    def _answer(self, done: Future[bool], user: str, then: Callable[[bool], None]) -> None:
        try:
            ok = done.result()
        except Exception:  # a broken hash in the file: that login fails, the others go on
            log.exception("password check of user %r failed", user[:64])
            ok = False
        try:
            self._loop.call_soon_threadsafe(then, ok)
        except RuntimeError:  # the loop closed while the hash was computed: nobody to tell
            pass

    def close(self) -> None:
        """Stop taking checks; one in progress finishes, queued ones are dropped."""
        self._pool.shutdown(wait=False, cancel_futures=True)
