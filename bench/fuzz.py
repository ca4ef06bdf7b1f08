"""Benchmark: a mutation fuzzer against a live broker's plain TCP listener.

    python -m bench.fuzz --inputs 1000000            # starts actorbroker serve (default config)
    python -m bench.fuzz --inputs 50000 --seed 7 --port 1883   # a broker already running

``--connections`` fuzzing clients (16) each connect at a random protocol
level (10% of CONNECTs are mutated: an input each), then send inputs one at
a time: a valid packet from the project's codec, mutated 9 times in 10
(:mod:`bench.fuzz_inputs`), followed by a PINGREQ. The PINGRESP says the
broker took the input and the connection goes on; the broker closing says
it refused it (a new connection follows); neither means the broker waits
for the rest of a packet whose length was mutated upwards. That last case
is known without waiting: a decoder fed the same bytes (the broker's, at
its default limits) says whether a packet is left unfinished; the client
then leaves the broker to its timeout and reconnects. Every byte the
broker sends is decoded: anything but whole, valid packets is a bug.

Meanwhile a healthy MQTT 5 client times QoS 1 round trips (PUBLISH until
PUBACK and the message back). At the end: the broker must still be
running, its log must hold no traceback and no internal error, its RSS
(started here) must be back within ``--rss-slack`` MiB of where it was
after the start, every protocol error it logged must name a spec rule
(``[MQTT-x.y.z-n]``) or section. Prints one report; exit status 1 if any
check failed. tests/integration/limits/test_limits_fuzz.py runs it for 45 s.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import uvloop

from actorbroker.codec import (ConnAck, Decoder, Disconnect, PingReq, PingResp, ProtocolError,
                               PubAck, Publish, Subscribe, Subscription, encode)
from actorbroker.codec import Connect as ConnectPacket
from actorbroker.transport.gate import sniff_level
from bench import brokers
from bench.fuzz_inputs import connect, encoded, mutate, mutate_body
from bench.fuzz_links import KINDS, Link, open_link, self_signed, ws_mutation

__all__ = ["FuzzReport", "fuzz", "main"]

_PING = {level: encode(PingReq(), level) for level in (3, 4, 5)}
MAX_PACKET = 1024 * 1024  # the broker's defaults: max_packet_size, max_connect_size
MAX_CONNECT = 64 * 1024
_RULE = re.compile(r"\[MQTT-[0-9.]+-[0-9]+\]|section [0-9.]+")
WS_MUTATIONS = 0.02  # on ws and wss: the share of inputs that break WebSocket, not MQTT
_WS_FRAME = b"(a broken WebSocket frame)"  # its place among inputs: compared by identity


@dataclass(frozen=True)
class _Target:
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
    healthy: list[float] = field(default_factory=list)
    healthy_errors: list[str] = field(default_factory=list)
    rss_start: int = 0
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

    def summary(self) -> str:
        return (f"{self.kind}: {self.inputs} inputs on {self.connections} connections"
                f" ({self.hellos_refused} valid CONNECTs unanswered) in {self.seconds:.1f}s"
                f" ({self.inputs / max(self.seconds, 1e-9):.0f}/s): refused {self.refused},"
                f" taken {self.taken}, waited on {self.waiting}; bad answers"
                f" {len(self.bad_answers)}, connections refused {len(self.open_errors)};"
                f" healthy client {len(self.healthy)} QoS 1 round trips,"
                f" p50 {self.percentile(0.5) * 1000:.1f} ms, p99"
                f" {self.percentile(0.99) * 1000:.1f} ms, errors {len(self.healthy_errors)};"
                f" RSS {self.rss_start / 2**20:.1f} -> {self.rss_end / 2**20:.1f} MiB;"
                f" log problems {len(self.log_problems)}, protocol errors without a rule id"
                f" {len(self.without_rule)}")


class _Budget:
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
    """Read until ``wanted`` PINGRESPs ("answered"), EOF ("closed") or ``patience``
    ("waiting"); the PINGRESPs read and how it ended."""
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


def _write(link: Link, rng: random.Random, inputs: list[bytes], level: int) -> None:
    """Each input and a PINGREQ after it (``_WS_FRAME``: a broken WebSocket frame)."""
    for data in inputs:
        if data is not _WS_FRAME:
            link.write(data + _PING[level])
        else:
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


async def _session(target: _Target, rng: random.Random, budget: _Budget,
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
                _write(link, rng, batch.good, level)
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
                    _write(link, rng, [batch.last], level)
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


async def _healthy(host: str, port: int, report: FuzzReport, done: asyncio.Event) -> None:
    """A client that wants nothing but QoS 1 round trips; every failure is recorded."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
        decoder = Decoder(5)
        pending: list[object] = []

        async def expect(kind: type) -> object:
            while True:
                while pending:
                    packet = pending.pop(0)
                    if type(packet) is kind:
                        return packet
                    if type(packet) is Publish and packet.qos:  # type: ignore[attr-defined]
                        ack = PubAck(packet.packet_id)  # type: ignore[attr-defined]
                        writer.write(encode(ack, 5))
                data = await asyncio.wait_for(reader.read(65536), 10)
                if not data:
                    raise EOFError("the broker closed the healthy client")
                pending.extend(decoder.feed(data))

        writer.write(encode(ConnectPacket("MQTT", 5, "fuzz-healthy", True, 60), 5))
        await expect(ConnAck)
        writer.write(encode(Subscribe(1, (Subscription("healthy/t", 1),)), 5))
        packet_id = 1
        while not done.is_set():
            packet_id = packet_id % 60000 + 2
            started = time.perf_counter()
            writer.write(encode(Publish("healthy/t", b"ok", 1, packet_id=packet_id), 5))
            got = await expect(Publish)
            if type(got) is Publish and got.qos:
                writer.write(encode(PubAck(got.packet_id), 5))
            report.healthy.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)
        writer.close()
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        report.healthy_errors.append(repr(exc))


async def fuzz(host: str, port: int, inputs: int, *, seed: int = 1, connections: int = 16,
               patience: float = 10.0, seconds: float | None = None, kind: str = "tcp",
               fuzz_port: int | None = None, batch: int = 8) -> FuzzReport:
    """Send ``inputs`` mutated inputs to the ``kind`` listener at ``host``:``fuzz_port``
    (``port`` if None), at most ``batch`` per write, fewer in all if ``seconds`` run out
    first; the healthy client uses the tcp listener at ``port``. The report (no broker
    checks)."""
    report = FuzzReport(kind=kind)
    target = _Target(kind, host, port if fuzz_port is None else fuzz_port, batch)
    budget = _Budget(inputs)
    done = asyncio.Event()
    healthy = asyncio.create_task(_healthy(host, port, report, done))
    started = time.monotonic()
    counter = iter(range(1 << 62))

    stop_at = None if seconds is None else started + seconds

    async def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        while await budget.more():
            if stop_at is not None and time.monotonic() > stop_at:
                budget.left = 0
                break
            try:
                await _session(target, rng, budget, report, patience, next(counter))
            except OSError as exc:  # no connection, no WebSocket upgrade: a finding
                report.open_errors.append(repr(exc))
                return

    await asyncio.gather(*(worker(i) for i in range(connections)))
    report.seconds = time.monotonic() - started
    done.set()
    await healthy
    return report


def check_broker(report: FuzzReport, log: Path) -> None:
    """Fill the report's log findings from the broker's log file."""
    for line in log.read_text(errors="replace").splitlines():
        if "Traceback" in line or "internal error" in line or " ERROR " in line:
            report.log_problems.append(line[:300])
        elif ("protocol error, closing:" in line and "were not logged" not in line
              and not _RULE.search(line)):
            report.without_rule.append(line.split("protocol error, closing:", 1)[1][:200])


def _listener(kind: str, workdir: Path) -> tuple[str, int | None]:
    """The ``[[listeners]]`` table of a ``kind`` listener on a free port (none for tcp:
    the broker's first listener is one), a certificate made for it when it needs one."""
    if kind == "tcp":
        return "", None
    port = brokers.free_port()
    table = f'[[listeners]]\ntype = "{kind}"\nbind = "127.0.0.1"\nport = {port}\n'
    table += "max_connections = 0\n"
    if kind in ("tls", "wss"):
        cert, key = self_signed(workdir)
        table += f'certfile = "{cert}"\nkeyfile = "{key}"\n'
    return table, port


def run_against_new_broker(inputs: int, seed: int, connections: int, rss_slack: float,
                           workdir: Path, seconds: float | None = None, kind: str = "tcp",
                           batch: int = 8) -> FuzzReport:
    """Start ``actorbroker serve`` (default limits, a ``kind`` listener), fuzz it, check
    it, stop it."""
    table, fuzz_port = _listener(kind, workdir)
    broker = brokers.start("actorbroker", workdir, defaults=True, listeners=table)
    try:
        rss_start = broker.rss()
        report = uvloop.run(fuzz("127.0.0.1", broker.port, inputs, seed=seed,
                                  connections=connections, seconds=seconds, kind=kind,
                                  fuzz_port=fuzz_port, batch=batch))
        report.rss_start = rss_start
        deadline = time.monotonic() + 10
        while broker.rss() > report.rss_start + rss_slack * 2**20 and time.monotonic() < deadline:
            time.sleep(0.2)  # connections still lingering, sessions ending
        report.rss_end = broker.rss()
        if broker.proc.poll() is not None:
            report.log_problems.append(f"the broker exited: status {broker.proc.returncode}")
        if report.rss_end > report.rss_start + rss_slack * 2**20:
            grew = (report.rss_end - report.rss_start) / 2**20
            report.log_problems.append(f"RSS grew by {grew:.1f} MiB, more than {rss_slack} MiB")
    finally:
        broker.stop()
    check_broker(report, broker.log)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--port", type=int, help="fuzz a broker already running on 127.0.0.1")
    parser.add_argument("--rss-slack", type=float, default=16.0, help="MiB (default 16)")
    parser.add_argument("--seconds", type=float, help="stop sending inputs after this long")
    parser.add_argument("--kind", choices=KINDS, default="tcp", help="the listener fuzzed")
    parser.add_argument("--batch", type=int, default=8, help="inputs per write (default 8)")
    args = parser.parse_args(argv)
    if args.port:
        report = uvloop.run(fuzz("127.0.0.1", args.port, args.inputs, seed=args.seed,
                                  connections=args.connections, seconds=args.seconds,
                                  batch=args.batch))
    else:
        with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
            report = run_against_new_broker(args.inputs, args.seed, args.connections,
                                            args.rss_slack, Path(tmp), args.seconds,
                                            args.kind, args.batch)
    print(report.summary())
    for name in ("bad_answers", "open_errors", "healthy_errors", "log_problems",
                 "without_rule"):
        for line in sorted(set(getattr(report, name)))[:10]:
            print(f"  {name}: {line}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
