"""Benchmark: one fuzzing connection of bench/fuzz.py, and the run's report. Stdlib, codec, bench.fuzz_inputs and bench.fuzz_links.

A connection (:func:`session`) sends a CONNECT at a random protocol level
(10% of them mutated: an input each), then inputs in batches: a valid
packet from the project's codec, mutated 9 times in 10 (:mod:`bench.fuzz_inputs`:
half of them anywhere, half inside the packet's body with its Remaining
Length made right again), each followed by a PINGREQ. A *mirror* decoder
fed the same bytes (the broker's, at its default limits) predicts what
the broker does with each: the inputs it predicts taken go in one write
with the CONNECT or after the previous batch's answers; the first it
predicts refused or waited on (a packet left unfinished) goes alone,
after those are answered, and ends the connection. Each input followed
by a PINGRESP was taken; the first without one was refused (the broker
closed, or said DISCONNECT) or waited on; inputs after it were never read
by the broker and go back to the budget, so the count is exact. Every
byte the broker sends is decoded: anything but whole, valid packets is a
bug.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from actorbroker.codec import Decoder, Disconnect, PingReq, PingResp, ProtocolError, encode
from actorbroker.transport.gate import sniff_level
from bench.fuzz_inputs import connect, encoded, mutate, mutate_body
from bench.fuzz_links import Link, open_link, ws_mutation

__all__ = ["Budget", "FuzzReport", "Target", "session"]

_PING = {level: encode(PingReq(), level) for level in (3, 4, 5)}
MAX_PACKET = 1024 * 1024  # the broker's defaults: max_packet_size, max_connect_size
MAX_CONNECT = 64 * 1024
WS_MUTATIONS = 0.02  # on ws and wss: the share of inputs that break WebSocket, not MQTT
_WS_FRAME = b"(a broken WebSocket frame)"  # its place among inputs: compared by identity


@dataclass(frozen=True)
class Target:
    """The listener fuzzed, and how many inputs go in one write."""

    kind: str
    host: str
    port: int
    batch: int


@dataclass
class FuzzReport:
    """What a run did and found."""

    kind: str = "tcp"
    inputs: int = 0
    connections: int = 0
    hellos_refused: int = 0  # valid CONNECTs the broker did not answer (not inputs)
    refused: int = 0        # inputs after which the broker closed the connection
    taken: int = 0          # inputs after which the connection went on (PINGRESP)
    waiting: int = 0        # inputs after which the broker waited for more bytes, or that
    #                         a PINGREQ's bytes finished (no answer: not waited for)
    seconds: float = 0.0
    bad_answers: list[str] = field(default_factory=list)
    open_errors: list[str] = field(default_factory=list)  # connections the broker refused
    ws_frames: int = 0      # inputs that were broken WebSocket frames (ws, wss)
    healthy: list[float] = field(default_factory=list)
    healthy_errors: list[str] = field(default_factory=list)
    rss_start: int = 0
    warmup: int = 0         # inputs before rss_warm was taken (0: none taken)
    rss_warm: int = 0
    rss_end: int = 0
    log_problems: list[str] = field(default_factory=list)
    without_rule: list[str] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        ordered = sorted(self.healthy)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")

    @property
    def ok(self) -> bool:
        return not (self.bad_answers or self.open_errors or self.healthy_errors
                    or self.log_problems or self.without_rule)

    def _warm(self) -> str:
        return f" ({self.rss_warm / 2**20:.1f} after {self.warmup})" if self.rss_warm else ""

    def summary(self) -> str:
        return (f"{self.kind}: {self.inputs} inputs on {self.connections} connections"
                f" ({self.hellos_refused} valid CONNECTs unanswered) in {self.seconds:.1f}s"
                f" ({self.inputs / max(self.seconds, 1e-9):.0f}/s): refused {self.refused},"
                f" taken {self.taken}, waited on {self.waiting}; bad answers"
                f" {len(self.bad_answers)}, connections refused {len(self.open_errors)};"
                f" healthy client {len(self.healthy)} QoS 1 round trips,"
                f" p50 {self.percentile(0.5) * 1000:.1f} ms, p99"
                f" {self.percentile(0.99) * 1000:.1f} ms, errors {len(self.healthy_errors)};"
                f" RSS {self.rss_start / 2**20:.1f}{self._warm()} ->"
                f" {self.rss_end / 2**20:.1f} MiB;"
                f" log problems {len(self.log_problems)}, protocol errors without a rule id"
                f" {len(self.without_rule)}")


class Budget:
    """Inputs left to send: taken in batches, the unsent part of a batch given back."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.out = 0  # taken, not yet counted nor given back
        self.changed = asyncio.Event()

    def take(self, wanted: int) -> int:
        got = min(wanted, self.left)
        self.left -= got
        self.out += got
        return got

    def settle(self, taken: int, used: int) -> None:
        """Of ``taken`` inputs, ``used`` were counted; the rest go back."""
        self.left += taken - used
        self.out -= taken
        self.changed.set()

    async def more(self) -> bool:
        """Whether inputs are left, waiting for other connections' batches to settle."""
        while self.left <= 0 and self.out > 0:
            self.changed.clear()
            await self.changed.wait()
        return self.left > 0


def _predict(mirror: Decoder, data: bytes) -> str:
    """What the broker does with ``data`` (an input and the PINGREQ after it): the same
    decoder (the broker's, at its default limits) fed the same bytes says "taken",
    "refused" (it fails, a second CONNECT among them, or a DISCONNECT ends the connection)
    or "waiting": the PINGREQ is part of a packet, so no PINGRESP comes (the packet is
    unfinished and the broker waits for its rest until its timeout, or the PINGREQ's
    bytes finished it). Not worth waiting for."""
    try:
        packets = mirror.feed(data)
    except ProtocolError:
        return "refused"
    if any(type(p) is Disconnect for p in packets):
        return "refused"
    if mirror.buffered > 0 or not packets or type(packets[-1]) is not PingReq:
        return "waiting"
    return "taken"


async def _answers(link: Link, decoder: Decoder, report: FuzzReport, wanted: int,
                   patience: float) -> tuple[int, str]:
    """Read until ``wanted`` PINGRESPs ("answered"), EOF or DISCONNECT ("closed") or
    ``patience`` ("waiting"); the PINGRESPs read and how it ended."""
    pongs = 0
    while pongs < wanted:
        data = await link.read(patience)
        if data is None:
            return pongs, "waiting"
        if not data:
            return pongs, "closed"
        try:
            packets = decoder.feed(data)
        except ProtocolError as exc:
            report.bad_answers.append(f"{exc} after {data[:40]!r}")
            return pongs, "closed"
        pongs += sum(type(p) is PingResp for p in packets)
        if any(type(p) is Disconnect for p in packets):
            return pongs, "closed"  # MQTT 5: the broker says it closes (over TLS it waits
            #                         a second for our EOF before its own: no need to wait)
    return pongs, "answered"


@dataclass
class _Batch:
    """Inputs drawn for one write: ``good`` ones (the mirror predicts each taken), then at
    most one ``last`` it predicts is refused or waited on (``end``), which goes alone
    once the good ones are answered: the broker's decoder fails on a whole read, so
    packets before a broken one in the same read may go unanswered. ``_WS_FRAME``: a
    broken WebSocket frame."""

    good: list[bytes] = field(default_factory=list)
    last: bytes | None = None
    end: str = "taken"


def _draw(rng: random.Random, level: int, mirror: Decoder, packet_id: int, size: int,
          websocket: bool) -> tuple[_Batch, int]:
    """Up to ``size`` inputs, ending early at the first the mirror predicts is refused or
    waited on (what followed it would be lost); and the next packet id."""
    batch = _Batch()
    while len(batch.good) < size and batch.last is None:
        packet_id = packet_id % 65535 + 1
        data = encoded(rng, level, packet_id)
        if websocket and rng.random() < WS_MUTATIONS:
            batch.last, batch.end = _WS_FRAME, "refused"
            break
        draw = rng.random()
        if draw < 0.45:
            data = mutate(rng, data, level, encoded(rng, level, packet_id))
        elif draw < 0.9:
            data = mutate_body(rng, data, level)
        end = _predict(mirror, data + _PING[level])
        if end == "taken":
            batch.good.append(data)
        else:
            batch.last, batch.end = data, end
    return batch, packet_id


def _write(link: Link, rng: random.Random, inputs: list[bytes], level: int,
           report: FuzzReport) -> None:
    """Each input and a PINGREQ after it (``_WS_FRAME``: a broken WebSocket frame)."""
    for data in inputs:
        if data is not _WS_FRAME:
            link.write(data + _PING[level])
        else:
            report.ws_frames += 1
            link.write_raw(ws_mutation(rng, encode(PingReq(), level)))
            link.write(_PING[level])


def _count(report: FuzzReport, pongs: int, outcome: str, sent: int) -> int:
    """Count the ``sent`` inputs of one write; how many were counted. Each input followed
    by a PINGRESP was taken; the first without one was refused (the broker closed) or
    waited on (silence, or the mirror's prediction: its PINGREQ is part of the unfinished
    packet); the broker did not read the inputs after it: they are not counted."""
    answered = min(pongs, sent)
    report.taken += answered
    if answered == sent:
        report.inputs += sent
        return sent
    if outcome == "closed":
        report.refused += 1
    else:
        report.waiting += 1
    report.inputs += answered + 1
    return answered + 1


async def session(target: Target, rng: random.Random, budget: Budget,
                   report: FuzzReport, patience: float, number: int) -> None:
    """One fuzzing connection: a CONNECT, then batches of inputs until the broker ends it.

    The CONNECT, its PINGREQ and the first good inputs go in one write (a client need
    not wait for the CONNACK): a round trip saved. Each batch taken from the budget is
    settled however the connection ends (what was not counted goes back)."""
    level = rng.choice((3, 4, 5))
    link = await open_link(target.kind, target.host, target.port, patience)
    report.connections += 1
    try:
        hello = encode(connect(rng, level, f"fz{number}"), level)
        mirror = Decoder(max_packet_size=MAX_PACKET, max_connect_size=MAX_CONNECT)
        if rng.random() < 0.1 and budget.take(1):  # the CONNECT is the input
            used = 0
            try:
                hello = mutate(rng, hello, level)
                sniffed = sniff_level(hello)  # what the broker answers a broken CONNECT in
                level = sniffed if sniffed in (3, 4, 5) else 4
                wanted = int(_predict(mirror, hello + _PING[level]) != "waiting")
                link.write(hello + _PING[level])
                pongs, outcome = await _answers(link, Decoder(level), report, wanted, patience)
                used = _count(report, pongs, outcome, 1)
            finally:
                budget.settle(1, used)
            return
        decoder = Decoder(level)
        _predict(mirror, hello)
        link.write(hello)
        prefix = 1  # the PINGREQ after the CONNECT: not an input
        packet_id = 0
        while await budget.more():
            taken, used = budget.take(target.batch), 0
            try:
                batch, packet_id = _draw(rng, level, mirror, packet_id, taken,
                                         target.kind in ("ws", "wss"))
                if prefix:
                    link.write(_PING[level])
                _write(link, rng, batch.good, level, report)
                pongs, outcome = await _answers(link, decoder, report,
                                                prefix + len(batch.good), patience)
                if pongs < prefix:  # a valid CONNECT not answered: the broker is overloaded?
                    report.hellos_refused += 1
                    return
                used = _count(report, pongs - prefix, outcome, len(batch.good))
                prefix = 0
                if outcome != "answered":
                    return
                if batch.last is not None:
                    _write(link, rng, [batch.last], level, report)
                    wanted = int(batch.end != "waiting")
                    pongs, outcome = await _answers(link, decoder, report, wanted, patience)
                    used += _count(report, pongs, outcome, 1)
                    return  # the mirror failed or waits: it cannot follow the broker further
            finally:
                budget.settle(taken, used)
    except ConnectionError:
        return
    finally:
        link.close()
