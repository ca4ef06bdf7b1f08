"""Load generator: MQTT client connections on asyncio. Imports asyncio, the stdlib and actorbroker.codec.

Three ``asyncio.Protocol`` classes share :class:`BaseConn` (CONNECT,
SUBSCRIBE, decoding with ``actorbroker.codec.Decoder``):

* :class:`SubscriberConn` counts every PUBLISH per publisher in a
  :class:`~bench.mqttload.stats.LinkTable`, records its latency (receive
  time of the read minus the send time in the payload) and acknowledges
  QoS 1 with one write per read.
* :class:`PublisherConn` sends pre-encoded batches (:class:`~.wire.Batcher`),
  one write per batch, bounded by count, deadline, the QoS 1 window (PUBACKs
  tracked by packet identifier), an optional rate, TCP back-pressure
  (``pause_writing``) and an end-to-end credit: at most ``credit``
  deliveries ahead of what the subscribers have counted, so the broker's
  queues stay bounded without the broker dropping anything.
* :class:`BaseConn` alone is an idle connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from time import monotonic_ns
from typing import Any

from actorbroker.codec import ConnAck, Decoder, ProtocolError, PubAck, Publish, SubAck

from .plan import PubSpec
from .stats import FINE_BUCKETS, Histogram, LinkTable
from .wire import (
    LEVEL, PAYLOAD, Batcher, connect_packet, disconnect_packet, publish_template,
    subscribe_packet,
)

__all__ = ["BaseConn", "PublisherConn", "SubscriberConn", "open_conn"]

_PUBACK = b"\x40\x02"


def _pace(wait_ns: int) -> float:
    """Timer delay for a paced publisher: libuv timers count whole milliseconds, and
    shorter delays would spin; a message due earlier goes out with the next one,
    stamped when it is written, so latency figures are not skewed."""
    return max(wait_ns / 1e9, 0.001)


class BaseConn(asyncio.Protocol):
    """A client connection: handshake, control packets, errors, back-pressure."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.decoder = Decoder(LEVEL)
        self.connack: asyncio.Future[ConnAck] = loop.create_future()
        self.suback: asyncio.Future[SubAck] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.paused = False
        self.errors: list[str] = []
        self.closing = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closing:
            self.errors.append(f"connection lost: {exc or 'closed by the broker'}")
        for fut in (self.connack, self.suback):
            if not fut.done():
                fut.set_exception(ConnectionError("connection closed by the broker"))
                fut.exception()  # retrieved: nobody may be waiting for it
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False

    def data_received(self, data: bytes) -> None:
        for packet in self._feed(data):
            self.control(packet)

    def _feed(self, data: bytes) -> list[Any]:
        try:
            return self.decoder.feed(data)
        except ProtocolError as exc:
            self.errors.append(f"bad packet from the broker: {exc}")
            self.close()
            return []

    def control(self, packet: Any) -> None:
        """Handle a packet that is not on the hot path."""
        if type(packet) is ConnAck:
            if not self.connack.done():
                self.connack.set_result(packet)
        elif type(packet) is SubAck:
            if not self.suback.done():
                self.suback.set_result(packet)
        else:
            self.errors.append(f"unexpected {type(packet).__name__} from the broker")

    async def subscribe(self, filters: Sequence[str], qos: int, timeout: float) -> None:
        """SUBSCRIBE and wait for a SUBACK granting every filter."""
        assert self.transport is not None
        self.transport.write(subscribe_packet(1, filters, qos))
        ack = await asyncio.wait_for(self.suback, timeout)
        if any(code >= 0x80 for code in ack.reason_codes):
            raise ConnectionError(f"SUBACK refused {list(filters)}: {ack.reason_codes}")

    def close(self, disconnect: bool = True) -> None:
        """Send DISCONNECT (optionally) and close."""
        self.closing = True
        if self.transport is not None and not self.transport.is_closing():
            if disconnect:
                self.transport.write(disconnect_packet())
            self.transport.close()


async def open_conn(conn: BaseConn, host: str, port: int, client_id: str,
                    timeout: float, keepalive: int = 0) -> BaseConn:
    """Connect ``conn`` (a fresh protocol instance) and wait for a successful CONNACK."""
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(loop.create_connection(lambda: conn, host, port), timeout)
    assert conn.transport is not None
    conn.transport.write(connect_packet(client_id, keepalive))
    ack = await asyncio.wait_for(conn.connack, timeout)
    if ack.reason_code != 0:
        raise ConnectionError(f"CONNACK {ack.reason_code} for {client_id}")
    return conn


class SubscriberConn(BaseConn):
    """Counts deliveries per publisher; records latency; acknowledges QoS 1."""

    def __init__(self, links: LinkTable, hist: Histogram, totals: list[int],
                 latency_skip: int = 0) -> None:
        super().__init__()
        self.links = links
        self.hist = hist
        self.totals = totals          # per publisher, shared by the process's connections
        self.latency_skip = latency_skip
        self.first_ns = 0
        self.last_ns = 0
        self.reads = 0

    def data_received(self, data: bytes) -> None:
        now = monotonic_ns()
        self.reads += 1
        packets = self._feed(data)
        unpack = PAYLOAD.unpack_from
        links = self.links
        count, last, totals = links.count, links.last, self.totals
        fine, skip = self.hist.fine, self.latency_skip
        acks: list[bytes] = []
        got = False
        for p in packets:
            if type(p) is not Publish:
                self.control(p)
                continue
            got = True
            pub, seq, sent_ns = unpack(p.payload)
            count[pub] += 1
            totals[pub] += 1
            if seq == last[pub] + 1:
                last[pub] = seq
            else:
                links.irregular(pub, seq)
            if seq >= skip:
                us = (now - sent_ns) // 1000
                if us < FINE_BUCKETS:
                    fine[us] += 1
                else:
                    self.hist.add_slow(us)
            if p.qos:
                acks.append(_PUBACK + p.packet_id.to_bytes(2, "big"))  # type: ignore[union-attr]
        if got:
            if not self.first_ns:
                self.first_ns = now
            self.last_ns = now
        if acks and self.transport is not None:
            self.transport.write(b"".join(acks))


class PublisherConn(BaseConn):
    """Publishes ``spec.count`` messages in batches until done or the deadline."""

    def __init__(self, spec: PubSpec, batch: int, credit: int,
                 progress: Any, expected: Any, progress_slots: Sequence[int]) -> None:
        super().__init__()
        self.spec = spec
        self.batch = batch
        self.credit = credit
        self.progress = progress
        self.expected = expected
        self.slots = list(progress_slots)
        self.batcher = Batcher(spec.pub_id,
                               [publish_template(t, spec.payload, spec.qos) for t in spec.topics],
                               spec.cycle or None)
        self.fan = spec.fan
        self.one_fan = spec.fan[0] if len(spec.fan) == 1 else 0
        self.sent = 0
        self.acked = 0
        self.writes = 0
        self.expected_sent = 0
        self.outstanding: set[int] = set()
        self.t0 = 0
        self.t_end = 0
        self.deadline = 0
        self.sending = False
        self.scheduled = False
        self.finished: asyncio.Future[None] = self.loop.create_future()

    def start(self, duration: float, grace: float) -> None:
        """Begin publishing now; stop sending after ``duration`` s, waiting ``grace`` s for PUBACKs."""
        self.t0 = monotonic_ns()
        self.deadline = self.t0 + int(duration * 1e9)
        self.grace = grace
        self.sending = True
        self.pump()

    def resume_writing(self) -> None:
        self.paused = False
        self._soon()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.sending = False
        if not self.finished.done():
            self.finished.set_result(None)

    def data_received(self, data: bytes) -> None:
        outstanding = self.outstanding
        freed = False
        for p in self._feed(data):
            if type(p) is PubAck:
                if p.packet_id in outstanding:
                    outstanding.discard(p.packet_id)
                    self.acked += 1
                    freed = True
                else:
                    self.errors.append(f"PUBACK for unknown packet id {p.packet_id}")
            else:
                self.control(p)
        if freed:
            if self.sending:
                self.pump()
            elif not outstanding:
                self._finish()

    def _soon(self, delay: float = 0.0) -> None:
        if self.scheduled or not self.sending:
            return
        self.scheduled = True
        if delay:
            self.loop.call_later(delay, self._timed_pump)
        else:
            self.loop.call_soon(self._timed_pump)

    def _timed_pump(self) -> None:
        self.scheduled = False
        self.pump()

    def pump(self) -> None:
        """Send one batch if everything allows it; reschedule itself as needed."""
        if not self.sending or self.transport is None:
            return
        now = monotonic_ns()
        left = self.spec.count - self.sent
        if left <= 0 or now >= self.deadline:
            self._stop_sending(now)
            return
        if self.paused:
            return                                   # resume_writing pumps again
        n = min(self.batch, left)
        rate = self.spec.rate
        if rate:
            due = int((now - self.t0) * rate / 1e9) + 1 - self.sent
            if due <= 0:
                self._soon(_pace(self.t0 + int(self.sent * 1e9 / rate) - now))
                return
            n = min(n, due)
        if self.spec.qos:
            n = min(n, self.spec.window - len(self.outstanding))
            if n <= 0:
                return                               # a PUBACK pumps again
        if self.credit:
            progress = self.progress
            done = sum([progress[i] for i in self.slots])
            if self.expected_sent - done >= self.credit:
                self._soon(0.002)  # libuv timers tick in whole ms
                return
        seq0 = self.sent
        data = self.batcher.build(seq0, n, now)
        if self.spec.qos:
            self.outstanding.update([s % 65535 + 1 for s in range(seq0, seq0 + n)])
        self.transport.write(data)
        self.writes += 1
        if self.one_fan:
            self.expected_sent += n * self.one_fan
        else:
            topic_of, fan = self.batcher.topic_index, self.fan
            self.expected_sent += sum([fan[topic_of(s)] for s in range(seq0, seq0 + n)])
        self.expected[self.spec.pub_id] = self.expected_sent
        self.sent += n
        self.t_end = now
        if not rate or self.sent >= self.spec.count:
            self._soon()
        else:
            self._soon(_pace(self.t0 + int(self.sent * 1e9 / rate) - now))

    def _stop_sending(self, now: int) -> None:
        self.sending = False
        if not self.outstanding:
            self._finish()
        else:
            self.loop.call_later(self.grace, self._finish)

    def _finish(self) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    def result(self) -> dict[str, Any]:
        return {"pub_id": self.spec.pub_id, "sent": self.sent, "acked": self.acked,
                "unacked": len(self.outstanding), "writes": self.writes,
                "t0": self.t0, "t_end": self.t_end, "errors": self.errors[:5]}
