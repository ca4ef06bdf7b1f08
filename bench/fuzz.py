"""Benchmark: a mutation fuzzer against a live broker, on a listener of each kind (tcp, tls, ws, wss).

    python -m bench.fuzz --inputs 1000000            # starts actorbroker serve (default config)
    python -m bench.fuzz --kind wss --inputs 5000    # its wss listener (a self-signed certificate)
    python -m bench.fuzz --inputs 50000 --seed 7 --port 1883   # a broker already running (tcp)

``--connections`` fuzzing clients (16) each run connection after
connection (:func:`bench.fuzz_session.session`: mutated CONNECTs and
packets, batched when a mirror decoder predicts the broker takes them,
counted exactly by the PINGRESPs after them) over the listener of
``--kind`` (:mod:`bench.fuzz_links`: TLS records or WebSocket binary
frames carry the fuzzed bytes; on ws and wss 2% of inputs are broken
WebSocket frames instead).

Meanwhile a healthy MQTT 5 client times QoS 1 round trips (PUBLISH until
PUBACK and the message back) on the tcp listener. At the end: the broker
must still be running and have accepted every connection, its log must
hold no traceback and no internal error, its RSS (started here) must be
back within ``--rss-slack`` MiB of where it was after the start, every
protocol error it logged must name a spec rule (``[MQTT-x.y.z-n]``) or
section (RFC 6455's for WebSocket). Prints one report; exit status 1 if
any check failed. tests/integration/limits/test_limits_fuzz.py runs it on
every kind (50,000 inputs on tcp).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import uvloop

from actorbroker.codec import ConnAck, Decoder, PubAck, Publish, Subscribe, Subscription, encode
from actorbroker.codec import Connect as ConnectPacket
from bench import brokers
from bench.fuzz_links import KINDS, self_signed
from bench.fuzz_session import Budget, FuzzReport, Target, session

__all__ = ["FuzzReport", "fuzz", "main"]

_RULE = re.compile(r"\[MQTT-[0-9.]+-[0-9]+\]|section [0-9.]+")


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
               fuzz_port: int | None = None, batch: int = 8, warmup: int = 0,
               rss: Callable[[], int] | None = None) -> FuzzReport:
    """Send ``inputs`` mutated inputs to the ``kind`` listener at ``host``:``fuzz_port``
    (``port`` if None), at most ``batch`` per write, fewer in all if ``seconds`` run out
    first; the healthy client uses the tcp listener at ``port``. The report (no broker
    checks; ``rss()`` is sampled once ``warmup`` inputs are counted)."""
    report = FuzzReport(kind=kind, warmup=warmup)
    target = Target(kind, host, port if fuzz_port is None else fuzz_port, batch)
    budget = Budget(inputs)
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
                await session(target, rng, budget, report, patience, next(counter))
            except OSError as exc:  # no connection, no WebSocket upgrade: a finding
                report.open_errors.append(repr(exc))
                return
            if rss is not None and not report.rss_warm and report.inputs >= warmup:
                report.rss_warm = rss()

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
                           batch: int = 8, warmup: int = 0) -> FuzzReport:
    """Start ``actorbroker serve`` (default limits, a ``kind`` listener), fuzz it, check
    it, stop it. RSS must end within ``rss_slack`` MiB of where it was after the start, or
    after the first ``warmup`` inputs: by then the broker's transient state (topic actors
    live up to a minute after their last publish, MQTT 5 sessions 10 s after their
    connection) has reached its high-water mark, which RSS keeps; what grows after that
    grows with the inputs."""
    table, fuzz_port = _listener(kind, workdir)
    broker = brokers.start("actorbroker", workdir, defaults=True, listeners=table)
    try:
        rss_start = broker.rss()
        report = uvloop.run(fuzz("127.0.0.1", broker.port, inputs, seed=seed,
                                  connections=connections, seconds=seconds, kind=kind,
                                  fuzz_port=fuzz_port, batch=batch, warmup=warmup,
                                  rss=broker.rss if warmup else None))
        report.rss_start = rss_start
        base = report.rss_warm or rss_start
        deadline = time.monotonic() + 10
        while broker.rss() > base + rss_slack * 2**20 and time.monotonic() < deadline:
            time.sleep(0.2)  # connections still lingering, sessions ending
        report.rss_end = broker.rss()
        if broker.proc.poll() is not None:
            report.log_problems.append(f"the broker exited: status {broker.proc.returncode}")
        if report.rss_end > base + rss_slack * 2**20:
            grew = (report.rss_end - base) / 2**20
            since = f"after {warmup} inputs" if report.rss_warm else "after the start"
            report.log_problems.append(
                f"RSS grew by {grew:.1f} MiB {since}, more than {rss_slack} MiB")
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
    parser.add_argument("--warmup", type=int, default=0,
                        help="inputs before the RSS baseline is taken (default 0: the start)")
    args = parser.parse_args(argv)
    if args.port:
        report = uvloop.run(fuzz("127.0.0.1", args.port, args.inputs, seed=args.seed,
                                  connections=args.connections, seconds=args.seconds,
                                  batch=args.batch))
    else:
        with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
            report = run_against_new_broker(args.inputs, args.seed, args.connections,
                                            args.rss_slack, Path(tmp), args.seconds,
                                            args.kind, args.batch, args.warmup)
    print(report.summary())
    for name in ("bad_answers", "open_errors", "healthy_errors", "log_problems",
                 "without_rule"):
        for line in sorted(set(getattr(report, name)))[:10]:
            print(f"  {name}: {line}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
