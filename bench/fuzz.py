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

from actorbroker.codec import (ConnAck, Decoder, PingReq, PingResp, ProtocolError, PubAck,
                               Publish, Subscribe, Subscription, encode)
from actorbroker.codec import Connect as ConnectPacket
from actorbroker.transport.gate import sniff_level
from bench import brokers
from bench.fuzz_inputs import connect, encoded, mutate

__all__ = ["FuzzReport", "fuzz", "main"]

_PING = {level: encode(PingReq(), level) for level in (3, 4, 5)}
MAX_PACKET = 1024 * 1024  # the broker's defaults: max_packet_size, max_connect_size
MAX_CONNECT = 64 * 1024
_RULE = re.compile(r"\[MQTT-[0-9.]+-[0-9]+\]|section [0-9.]+")


@dataclass
class FuzzReport:
    """What a run did and found."""

    inputs: int = 0
    connections: int = 0
    refused: int = 0        # inputs after which the broker closed the connection
    taken: int = 0          # inputs after which the connection went on (PINGRESP)
    waiting: int = 0        # inputs after which the broker waited for more bytes
    seconds: float = 0.0
    bad_answers: list[str] = field(default_factory=list)
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
        return not (self.bad_answers or self.healthy_errors or self.log_problems
                    or self.without_rule)

    def summary(self) -> str:
        return (f"{self.inputs} inputs on {self.connections} connections in {self.seconds:.1f}s"
                f" ({self.inputs / max(self.seconds, 1e-9):.0f}/s): refused {self.refused},"
                f" taken {self.taken}, waited on {self.waiting}; bad answers"
                f" {len(self.bad_answers)}; healthy client {len(self.healthy)} QoS 1 round trips,"
                f" p50 {self.percentile(0.5) * 1000:.1f} ms, p99"
                f" {self.percentile(0.99) * 1000:.1f} ms, errors {len(self.healthy_errors)};"
                f" RSS {self.rss_start / 2**20:.1f} -> {self.rss_end / 2**20:.1f} MiB;"
                f" log problems {len(self.log_problems)}, protocol errors without a rule id"
                f" {len(self.without_rule)}")


class _Budget:
    def __init__(self, total: int) -> None:
        self.left = total

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def _unfinished(mirror: Decoder, data: bytes) -> bool:
    """Whether the broker, reading ``data``, waits for more bytes: the same decoder, fed the
    same bytes, says so (then nothing is worth waiting for). A decoder that failed says
    the broker closes."""
    try:
        mirror.feed(data)
    except ProtocolError:
        return False
    return mirror.buffered > 0


async def _answers(reader: asyncio.StreamReader, decoder: Decoder, report: FuzzReport,
                   patience: float) -> str:
    """Read until a PINGRESP ("taken"), EOF ("closed") or ``patience`` ("waiting")."""
    while True:
        try:
            data = await asyncio.wait_for(reader.read(65536), patience)
        except asyncio.TimeoutError:
            return "waiting"
        except ConnectionError:
            return "closed"
        if not data:
            return "closed"
        try:
            packets = decoder.feed(data)
        except ProtocolError as exc:
            report.bad_answers.append(f"{exc} after {data[:40]!r}")
            return "closed"
        if any(type(p) is PingResp for p in packets):
            return "taken"


async def _session(host: str, port: int, rng: random.Random, budget: _Budget,
                   report: FuzzReport, patience: float, number: int) -> None:
    """One fuzzing connection: a CONNECT, then inputs until the broker ends it."""
    level = rng.choice((3, 4, 5))
    reader, writer = await asyncio.open_connection(host, port)
    report.connections += 1
    try:
        hello = encode(connect(rng, level, f"fz{number}"), level)
        mutated = rng.random() < 0.1 and budget.take()
        if mutated:
            report.inputs += 1
            hello = mutate(rng, hello, level)
            sniffed = sniff_level(hello)  # what the broker answers a broken CONNECT in
            level = sniffed if sniffed in (3, 4, 5) else 4
        decoder = Decoder(level)
        mirror = Decoder(max_packet_size=MAX_PACKET, max_connect_size=MAX_CONNECT)
        if _unfinished(mirror, hello + _PING[level]):
            report.waiting += 1
            return
        writer.write(hello + _PING[level])
        outcome = await _answers(reader, decoder, report, patience)
        if mutated:
            _count(report, outcome)
        if outcome != "taken":
            return
        packet_id = 1
        while budget.take():
            report.inputs += 1
            packet_id = packet_id % 65535 + 1
            data = encoded(rng, level, packet_id)
            if rng.random() < 0.9:
                data = mutate(rng, data, level, encoded(rng, level, packet_id))
            if _unfinished(mirror, data + _PING[level]):
                writer.write(data + _PING[level])
                report.waiting += 1  # the broker holds it until connect_timeout: not our wait
                return
            writer.write(data + _PING[level])
            outcome = await _answers(reader, decoder, report, patience)
            _count(report, outcome)
            if outcome != "taken":
                return
    except ConnectionError:
        return
    finally:
        writer.close()


def _count(report: FuzzReport, outcome: str) -> None:
    if outcome == "taken":
        report.taken += 1
    elif outcome == "closed":
        report.refused += 1
    else:
        report.waiting += 1


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
               patience: float = 10.0, seconds: float | None = None) -> FuzzReport:
    """Send ``inputs`` mutated inputs to ``host``:``port`` (fewer if ``seconds`` run out
    first); the report (no broker checks)."""
    report = FuzzReport()
    budget = _Budget(inputs)
    done = asyncio.Event()
    healthy = asyncio.create_task(_healthy(host, port, report, done))
    started = time.monotonic()
    counter = iter(range(1 << 62))

    stop_at = None if seconds is None else started + seconds

    async def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        while budget.left > 0:
            if stop_at is not None and time.monotonic() > stop_at:
                budget.left = 0
                break
            await _session(host, port, rng, budget, report, patience, next(counter))

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


def run_against_new_broker(inputs: int, seed: int, connections: int, rss_slack: float,
                           workdir: Path, seconds: float | None = None) -> FuzzReport:
    """Start ``actorbroker serve`` (default limits), fuzz it, check it, stop it."""
    broker = brokers.start("actorbroker", workdir, defaults=True)
    try:
        rss_start = broker.rss()
        report = asyncio.run(fuzz("127.0.0.1", broker.port, inputs, seed=seed,
                                  connections=connections, seconds=seconds))
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
    args = parser.parse_args(argv)
    if args.port:
        report = asyncio.run(fuzz("127.0.0.1", args.port, args.inputs, seed=args.seed,
                                  connections=args.connections, seconds=args.seconds))
    else:
        with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
            report = run_against_new_broker(args.inputs, args.seed, args.connections,
                                            args.rss_slack, Path(tmp), args.seconds)
    print(report.summary())
    for name in ("bad_answers", "healthy_errors", "log_problems", "without_rule"):
        for line in sorted(set(getattr(report, name)))[:10]:
            print(f"  {name}: {line}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
