"""Benchmark: the per-delivery floor of the actor runtime and of loopback writes (issue 7, ``routes``).

Run with ``python -m bench.delivery_floor`` (or ``python bench/delivery_floor.py``)
from the project root; ``--quick`` for fewer rounds. Prints figures; asserts
nothing; every loop is bounded (rounds, connection counts, a deadline on
every wait).

In ``routes`` (bench/scenarios.py) each publish reaches 6.3 subscribers on
different connections, so each delivery is a session actor turn and (with
the load generator's credit, about every third delivery) a socket write of
its own; in ``routes-1topic`` the same 6 sessions take big batches. This
measures the bottom of one delivery on the project's runtime
(``supervisors.LoopActor`` on uvloop, one loop), in wall and process CPU
time (user + system: a loopback ``send`` does the receiver's TCP work too;
``kernel`` is the system part, from rusage), per message:

* tell + turn: a fan actor (as the registry) tells a 3-field frozen message
  to each of N actors (a turn each), or N messages to one actor (turns of
  256); split into building the message, the tells, and the turns;
* write: ``transport.write`` of a 20-byte packet to each of N connected
  sockets on 127.0.0.1 (1 or 3 packets per write), N times to one socket,
  64 packets joined per write, and one write per socket from a
  ``call_soon`` callback each (a per-connection flush). A child process
  accepts and drains;
* chain: N actors owning a socket each; the fan tells each a message whose
  turn encodes a QoS 0 PUBLISH (``actorbroker.codec.encode``) and writes it;

and compares them with the goal's budget: ``routes`` at 0.8 of
``routes-1topic`` (37,517 publishes/s measured) with 6.3 deliveries per
publish is ~189k deliveries/s on one loop, ~5.3 us per delivery with
everything else (decoding, the publisher's session, routing) included.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop  # noqa: E402

from actorbroker.codec import Publish, encode  # noqa: E402
from supervisors import LoopActor, LoopFuture  # noqa: E402

ONE_TOPIC_RATE = 37_517  # routes-1topic, publishes/s (docs/benchmarks.md, full run)
FAN = 6.3  # deliveries per publish in routes
GOAL = 0.8
PACKET = encode(Publish("site1/dev2/m3", b"x" * 3), 4)  # 20 bytes on the wire
WAIT = 60.0  # seconds: a bound on every wait


def budget_us() -> float:
    """The CPU time one delivery may take, all included, for the goal (one loop)."""
    return 1e6 / (GOAL * ONE_TOPIC_RATE * FAN)


@dataclass(frozen=True, slots=True)
class Note:
    """What the fan tells: the shape of a ``Deliver`` (a batch, a QoS, an epoch)."""

    messages: tuple[Any, ...]
    qos: int
    epoch: int


class Clock:
    """Wall and process CPU time of a span; ``kernel`` sums the system time of all spans."""

    kernel = 0.0

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.sys = resource.getrusage(resource.RUSAGE_SELF).ru_stime

    def stop(self) -> tuple[float, float]:
        Clock.kernel += resource.getrusage(resource.RUSAGE_SELF).ru_stime - self.sys
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


class Tally:
    """Counts messages down to zero across actors; resolves ``done`` at zero."""

    def __init__(self) -> None:
        self.left = 0
        self.done: LoopFuture[None] = LoopFuture()

    def arm(self, count: int) -> None:
        self.left = count
        self.done = LoopFuture()

    def hit(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.set(None)


class Sink(LoopActor):
    def __init__(self, tally: Tally) -> None:
        super().__init__()
        self.tally = tally

    def on_receive(self, message: Any) -> None:
        self.tally.hit()


class Writer(LoopActor):
    """A session stand-in: encode a QoS 0 PUBLISH, write it to its own socket."""

    def __init__(self, tally: Tally, transport: asyncio.Transport) -> None:
        super().__init__()
        self.tally = tally
        self.transport = transport

    def on_receive(self, message: Any) -> None:
        if message is None:  # "are you started?"
            return
        self.transport.write(encode(message.messages[0], 4))
        self.tally.hit()


class Fan(LoopActor):
    """Tells one ``Note`` to each target in order; keeps the time its loop took."""

    def __init__(self, spent: list[float]) -> None:
        super().__init__()
        self.targets: list[Any] = []
        self.spent = spent  # [wall, cpu] of the last loop, read by the driver (same thread)

    def on_receive(self, message: Any) -> None:
        if isinstance(message, list):
            self.targets = message
            return
        clock = Clock()
        for ref in self.targets:
            ref.tell(Note(message, 0, 1))
        self.spent[:] = clock.stop()


def line(name: str, wall_us: float, cpu_us: float, note: str = "") -> None:
    print(f"  {name:<62} {wall_us:6.2f} us {cpu_us:6.2f} us cpu  {note}")


def kernel_share(spans: int) -> str:
    """The system share of the CPU time measured since the last call (rusage is coarse)."""
    kernel, Clock.kernel = Clock.kernel, 0.0
    return f"kernel {kernel / spans * 1e6:.2f} us" if spans else ""


async def _fan_rounds(fan: Any, spent: list[float], targets: list[Any], tally: Tally, rounds: int,
                      payload: tuple[Any, ...]) -> tuple[float, float, float, float]:
    """Per message: (wall, cpu) of whole rounds, and of the fan's tell loop alone, in us."""
    await fan.ask(targets, block=False)
    wall = cpu = tell_wall = tell_cpu = 0.0
    for _ in range(rounds):
        tally.arm(len(targets))
        clock = Clock()
        fan.tell(payload)
        await asyncio.wait_for(tally.done, WAIT)
        w, c = clock.stop()
        wall, cpu = wall + w, cpu + c
        tell_wall, tell_cpu = tell_wall + spent[0], tell_cpu + spent[1]
    n = len(targets) * rounds / 1e6
    return wall / n, cpu / n, tell_wall / n, tell_cpu / n


async def bench_tells(actors: int, rounds: int) -> dict[str, float]:
    tally = Tally()
    sinks = [Sink.start(tally) for _ in range(actors)]
    spent = [0.0, 0.0]
    fan = Fan.start(spent)
    await sinks[-1].ask(None, block=False)
    out: dict[str, float] = {}
    print(f"tell + turn, {actors:,} messages per round, {rounds} rounds (per message):")
    clock = Clock()
    for _ in range(rounds):
        for _ in range(actors):
            Note(("m",), 0, 1)
    build_wall, build_cpu = (t / (actors * rounds) * 1e6 for t in clock.stop())
    for name, targets in (("different", sinks), ("same", [sinks[0]] * actors)):
        await _fan_rounds(fan, spent, targets, tally, 1, ("warm-up",))
        wall, cpu, tw, tc = await _fan_rounds(fan, spent, targets, tally, rounds, ("m",))
        where = f"{actors:,} actors, one message each" if name == "different" else \
            f"one actor, {actors:,} messages (turns of 256)"
        line(f"tell + turn, {where}", wall, cpu)
        line("  of which the tells (the fan's loop)", tw, tc)
        line("    of which building the message (3-field frozen dataclass)", build_wall,
             build_cpu)
        line("  of which scheduling + running the turns", wall - tw, cpu - tc)
        out[f"tell_{name}"] = cpu
    for ref in [*sinks, fan]:
        await ref.stop(block=False)
    return out


# -- sockets ------------------------------------------------------------------------


class Drain(asyncio.Protocol):
    """Reader side: count bytes (shared total), nothing else."""

    total = 0

    def data_received(self, data: bytes) -> None:
        Drain.total += len(data)


async def _reader_main() -> None:
    """The child process: accept and drain on 127.0.0.1 until stdin closes (or WAIT x 10)."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Drain, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    await asyncio.wait_for(stdin_closed, WAIT * 10)
    server.close()


async def _connect(port: int, count: int) -> list[asyncio.Transport]:
    loop = asyncio.get_running_loop()
    transports: list[asyncio.Transport] = []
    for start in range(0, count, 500):
        made = await asyncio.wait_for(asyncio.gather(*(
            loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
            for _ in range(start, min(count, start + 500)))), WAIT)
        transports += [t for t, _ in made]
    return transports


async def _settle(transports: list[asyncio.Transport]) -> int:
    """Wait (bounded) until every transport handed its bytes to the kernel; bytes left."""
    for _ in range(200):
        left = sum(t.get_write_buffer_size() for t in transports)
        if not left:
            return 0
        await asyncio.sleep(0.01)
    return left


async def bench_writes(transports: list[asyncio.Transport], rounds: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    n = len(transports)
    one = transports[0]
    print(f"transport.write of a {len(PACKET)}-byte packet, {n:,} per round, {rounds} rounds:")
    out: dict[str, float] = {}

    def timed(name: str, label: str, body: Any, packets: int) -> None:
        wall = cpu = Clock.kernel = 0.0
        for _ in range(rounds):
            clock = Clock()
            body()
            w, c = clock.stop()
            wall, cpu = wall + w, cpu + c
        per = packets * rounds / 1e6
        line(label, wall / per, cpu / per, kernel_share(packets * rounds))
        out[name] = cpu / per

    async def run(name: str, label: str, body: Any, packets: int) -> None:
        body()  # warm-up
        await _settle(transports)
        timed(name, label, body, packets)
        left = await _settle(transports)
        if left:
            print(f"    ({left:,} bytes were still buffered in user space after it)")

    def different() -> None:
        for t in transports:
            t.write(PACKET)

    def same() -> None:
        for _ in range(n):
            one.write(PACKET)

    three = PACKET * 3

    def different3() -> None:
        for t in transports:
            t.write(three)

    joined = PACKET * 64

    def coalesced() -> None:
        for _ in range(n // 64):
            one.write(joined)

    await run("write_different", f"a different socket each write ({n:,} sockets)", different, n)
    await run("write_different3", "a different socket each write, 3 packets joined (per packet)",
              different3, 3 * n)
    await run("write_same", "the same socket each write", same, n)
    await run("write_coalesced", "the same socket, 64 packets joined per write (per packet)",
              coalesced, n // 64 * 64)
    wall = cpu = Clock.kernel = 0.0
    for _ in range(rounds):
        done = loop.create_future()
        clock = Clock()
        for t in transports:
            loop.call_soon(t.write, PACKET)
        loop.call_soon(done.set_result, None)
        await done
        w, c = clock.stop()
        wall, cpu = wall + w, cpu + c
        await _settle(transports)
    line("a different socket each write, one call_soon callback each", wall / n / rounds * 1e6,
         cpu / n / rounds * 1e6, kernel_share(n * rounds))
    out["write_callback"] = cpu / n / rounds * 1e6
    return out


async def bench_chain(transports: list[asyncio.Transport], rounds: int) -> dict[str, float]:
    tally = Tally()
    writers = [Writer.start(tally, t) for t in transports]
    spent = [0.0, 0.0]
    fan = Fan.start(spent)
    await writers[-1].ask(None, block=False)
    publish = Publish("site1/dev2/m3", b"x" * 3)
    print("chain: fan -> one actor per socket: encode a QoS 0 PUBLISH, write it (per delivery):")
    await _fan_rounds(fan, spent, writers, tally, 1, (publish,))
    await _settle(transports)
    Clock.kernel = 0.0
    wall, cpu, _, _ = await _fan_rounds(fan, spent, writers, tally, rounds, (publish,))
    line(f"tell + turn + encode + write, {len(writers):,} actors and sockets", wall, cpu,
         kernel_share(len(writers) * rounds))
    await _settle(transports)
    for ref in [*writers, fan]:
        await ref.stop(block=False)
    return {"chain": cpu}


async def bench_sockets(sockets: int, rounds: int) -> dict[str, float]:
    reader = subprocess.Popen([sys.executable, "-m", "bench.delivery_floor", "--reader"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1])
    try:
        assert reader.stdout is not None
        port = int(reader.stdout.readline())
        transports = await _connect(port, sockets)
        out = await bench_writes(transports, rounds)
        out.update(await bench_chain(transports, rounds))
        for t in transports:
            t.close()
        await asyncio.sleep(0.1)
        return out
    finally:
        if reader.stdin is not None:
            reader.stdin.close()
        try:
            reader.wait(10)
        except subprocess.TimeoutExpired:
            reader.kill()


def conclude(figures: dict[str, float]) -> None:
    budget = budget_us()
    print(f"budget for routes at {GOAL} x routes-1topic ({ONE_TOPIC_RATE:,} publishes/s x "
          f"{FAN} deliveries = {GOAL * ONE_TOPIC_RATE * FAN:,.0f} deliveries/s on one loop):")
    line("CPU per delivery, everything included", budget, budget)
    print("floors (CPU per delivery, nothing else counted: no decoding, publisher, routing):")
    tell = figures["tell_different"]
    for label, cost in (
        ("tell + turn (different actors) + a write of its own (callback)",
         tell + figures["write_callback"]),
        ("the chain: tell, turn, encode, write, one actor and socket each", figures["chain"]),
        ("tell + turn (different actors) + a third of a write (3 per write)",
         tell + figures["write_different3"]),
        ("routes-1topic's shape: same actor, 64 packets per write",
         figures["tell_same"] + figures["write_coalesced"]),
    ):
        line(label, cost, cost, f"{cost / budget:.0%} of the budget")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.delivery_floor")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--actors", type=int, default=10_000, help="actors and sockets")
    parser.add_argument("--reader", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reader:
        uvloop.run(_reader_main())
        return
    rounds = 3 if args.quick else 20
    print(f"delivery floor: uvloop {uvloop.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (indicative figures)")
    figures = uvloop.run(bench_tells(args.actors, rounds))
    figures.update(uvloop.run(bench_sockets(args.actors, rounds)))
    conclude(figures)


if __name__ == "__main__":
    main()
