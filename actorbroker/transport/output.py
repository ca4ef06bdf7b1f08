"""Transport layer: a connection's coalescing, bounded output buffer. Imports stdlib and asyncio only.

Encoded packets are appended to a list; the first append of a loop tick
puts the buffer on its listener's :class:`FlushQueue`, which at the next
iteration hands each buffer's whole list to its transport in a single
``write``: one syscall per tick however many packets the session sent, which
is what makes fan-out cheap (docs/benchmarks.md, "Transport: coalesced
writes": 76,000 messages/s at one write each, about a million coalesced). One queue per listener, not a
``loop.call_soon`` per buffer: with many connections getting one packet each
(a sparse fan-out) a uvloop callback per connection costs ~2 us more per
write (``bench.delivery_floor``).

Backpressure: ``congested`` is True while the transport has called
``pause_writing`` or more than ``high_water`` bytes wait (here plus in the
transport's own buffer). The owner stops queueing what it can drop;
``add`` refuses (returns False) once more than ``max_output`` bytes are
already waiting, so a peer that never reads costs bounded memory even if
its session ignores ``congested``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .stats import TransportStats

__all__ = ["FlushQueue", "WriteBuffer"]

log = logging.getLogger(__name__)


class FlushQueue:
    """The write buffers of one listener with output queued this tick, flushed at the next."""

    __slots__ = ("__weakref__", "_armed", "_loop", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: list[WriteBuffer] = []
        self._armed = False

    def due(self, buffer: WriteBuffer) -> None:
        """Flush ``buffer`` at the next run (it keeps its own "scheduled" bit)."""
        self._pending.append(buffer)
        if not self._armed:
            self._armed = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        pending, self._pending, self._armed = self._pending, [], False
        for buffer in pending:
            try:
                buffer.flush_due()
            except Exception:  # one connection's failure must not hold up the others' output
                log.exception("flushing a connection's output failed")


class WriteBuffer:
    """Output list of one connection, flushed once per loop tick."""

    __slots__ = ("transport", "write_paused", "bytes_out", "_stats", "_high", "_max",
                 "_chunks", "_size", "_scheduled", "_seen", "_after_flush", "_flushes")

    def __init__(self, flushes: FlushQueue, stats: TransportStats,
                 high_water: int, max_output: int, after_flush: Callable[[], None]) -> None:
        #: Where flushes go; None until connected and again once the socket is gone.
        self.transport: asyncio.WriteTransport | None = None
        #: Set by the protocol's pause_writing/resume_writing callbacks.
        self.write_paused = False
        self.bytes_out = 0  # this connection's share of stats.bytes_out
        self._stats = stats
        self._high = high_water
        self._max = max_output
        self._chunks: list[bytes] = []
        self._size = 0
        self._scheduled = False
        self._seen = False  # congestion was reported since the last drain
        self._after_flush = after_flush
        self._flushes = flushes

    @property
    def buffered(self) -> int:
        """Bytes queued here plus bytes the transport has not handed to the kernel."""
        t = self.transport
        return self._size + (t.get_write_buffer_size() if t is not None else 0)

    @property
    def congested(self) -> bool:
        """Whether the owner should hold back; a True answer is remembered for ``drained``."""
        t = self.transport  # ``buffered``, inline: asked once per delivery
        busy = self.write_paused or (
            self._size + (t.get_write_buffer_size() if t is not None else 0) > self._high)
        if busy:
            self._seen = True
        return busy

    def drained(self) -> bool:
        """True once per episode: congestion was reported and has cleared."""
        if self._seen and not self.write_paused and self.buffered <= self._high:
            self._seen = False
            return True
        return False

    def add(self, chunks: list[bytes], size: int) -> bool:
        """Queue ``chunks`` (``size`` bytes in all); False if ``max_output`` is already exceeded."""
        t = self.transport  # ``buffered``, inline: once per send
        if self._size + (t.get_write_buffer_size() if t is not None else 0) > self._max:
            return False
        self._chunks.extend(chunks)
        self._size += size
        if not self._scheduled:
            self._scheduled = True
            self._flushes.due(self)
        return True

    def put(self, data: bytes) -> None:
        """Queue ``data`` unconditionally (a farewell packet just before ``flush``)."""
        self._chunks.append(data)
        self._size += len(data)

    def flush(self) -> None:
        """Write everything queued now, in one ``transport.write``."""
        chunks = self._chunks
        transport = self.transport
        if not chunks or transport is None:
            return
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._size = 0
        transport.write(data)
        self._stats.writes += 1
        self._stats.bytes_out += len(data)
        self.bytes_out += len(data)

    def clear(self) -> None:
        """Drop everything queued (the socket is gone or being aborted)."""
        self._chunks.clear()
        self._size = 0

    def detach(self) -> None:
        """The socket is gone: drop what is queued and the owner's callback (a flush
        still due then does nothing), breaking the cycle owner -> buffer -> owner."""
        self.clear()
        self.transport = None
        self._after_flush = _nothing

    def flush_due(self) -> None:
        """The flush :class:`FlushQueue` runs: write, then tell the owner (drained, or
        close after a refused CONNACK)."""
        self._scheduled = False
        self.flush()
        self._after_flush()


def _nothing() -> None:
    """The ``after_flush`` of a detached :class:`WriteBuffer`."""
