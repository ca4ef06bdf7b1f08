"""Benchmark: the supervisors/ actor runtime on uvloop.

Run with ``python -m bench.actors`` (or ``python bench/actors.py``) from the
project root; ``--quick`` for smaller sizes. Prints figures; asserts nothing.
Goals from the issue: tell between two loop actors >= 800k msg/s; 100k loop
actors started in < 5 s; RSS per actor < 6 KiB; 100k crash/restart cycles
with RSS flat.

* tell: a producer actor tells N messages to a consumer (in bursts of 1000
  per producer message); also a ping-pong with one message in flight.
* ask: sequential ``await ref.ask(i, block=False)`` round trips, from a plain
  coroutine and from inside an actor's async handler.
* start/stop: K LoopActors started (until the last one's on_start ran), then
  all stopped (until every stop future resolved). RSS per actor is the VmRSS
  growth over the K live actors divided by K, after gc.collect().
* supervised: K children started one request at a time (pipelined) under a
  ShardedSupervisor with 8 shards, each start waiting for on_start; then the
  whole tree stopped.
* restarts: one worker under a one_for_one Supervisor, crashed N times; each
  cycle waits for the restarted worker's on_start. The supervisor gets a
  synthetic clock (+1 s per reading) with intensity 10 in 5 s, so the real
  restart path runs every time without escalating. Logging is disabled while
  it runs (pykka logs a traceback per crash). RSS is sampled every 10% of
  the cycles, after gc.collect().
* baseline: pykka's own ThreadingActor, tell and ask, for comparison.
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
from importlib.metadata import version
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pykka
import uvloop

from supervisors import (
    ChildSpec,
    Intensity,
    LoopActor,
    LoopFuture,
    Restart,
    ShardedSupervisor,
    Supervisor,
    exit_future,
    start_sharded_child,
    which_children,
)


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def report(name: str, value: float, unit: str, goal: str = "") -> None:
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"
    print(f"  {name:<46} {text:>14} {unit:<10} {goal}")


# -- actors -------------------------------------------------------------------------


class Consumer(LoopActor):
    def __init__(self, expected: int, done: LoopFuture[float]) -> None:
        super().__init__()
        self.left = expected
        self.done = done

    def on_receive(self, message: Any) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.set(time.perf_counter())


class Producer(LoopActor):
    def __init__(self, target: pykka.ActorRef[Any]) -> None:
        super().__init__()
        self.target = target

    def on_receive(self, message: Any) -> None:
        tell = self.target.tell
        for i in range(message):
            tell(i)


class Bouncer(LoopActor):
    def __init__(self, done: LoopFuture[float]) -> None:
        super().__init__()
        self.peer: pykka.ActorRef[Any] | None = None
        self.done = done

    def on_receive(self, message: Any) -> None:
        if isinstance(message, pykka.ActorRef):
            self.peer = message
        elif message == 0:
            self.done.set(time.perf_counter())
        else:
            assert self.peer is not None
            self.peer.tell(message - 1)


class Echo(LoopActor):
    def on_receive(self, message: Any) -> Any:
        return message


class Asker(LoopActor):
    async def run(self, target: pykka.ActorRef[Any], n: int) -> float:
        began = time.perf_counter()
        for i in range(n):
            await target.ask(i, block=False)
        return time.perf_counter() - began


class ThreadSink(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return message


@dataclass
class Incarnations:
    """Where each new Worker announces itself."""

    next: LoopFuture[pykka.ActorRef[Any]]


class Worker(LoopActor):
    def __init__(self, incarnations: Incarnations) -> None:
        super().__init__()
        self.incarnations = incarnations

    def on_start(self) -> None:
        self.incarnations.next.set(self.actor_ref)

    def on_receive(self, message: Any) -> Any:
        raise RuntimeError("crash on request")


# -- benchmarks ---------------------------------------------------------------------


async def bench_tell(n: int) -> None:
    done: LoopFuture[float] = LoopFuture()
    consumer = Consumer.start(n, done)
    producer = Producer.start(consumer)
    began = time.perf_counter()
    for _ in range(n // 1000):
        producer.tell(1000)
    ended = await done
    report("tell, producer -> consumer", n / (ended - began), "msg/s", "goal >= 800,000")
    done = LoopFuture()
    a, b = Bouncer.start(done), Bouncer.start(done)
    a.tell(b)
    b.tell(a)
    rounds = n // 4
    began = time.perf_counter()
    a.tell(rounds)
    ended = await done
    report("tell, ping-pong (one message in flight)", rounds / (ended - began), "msg/s")
    for ref in (consumer, producer, a, b):
        await ref.stop(block=False)


async def bench_ask(n: int) -> None:
    echo = Echo.start()
    began = time.perf_counter()
    for i in range(n):
        await echo.ask(i, block=False)
    report("ask round trips, coroutine -> actor", n / (time.perf_counter() - began), "asks/s")
    asker = Asker.start()
    elapsed = await asker.proxy().run(echo, n)
    report("ask round trips, actor -> actor (async handler)", n / elapsed, "asks/s")
    await echo.stop(block=False)
    await asker.stop(block=False)


async def bench_start_stop(k: int) -> None:
    gc.collect()
    before = rss_kib()
    began = time.perf_counter()
    refs = [Echo.start() for _ in range(k)]
    await refs[-1].ask(None, block=False)  # boots run in start order: all started
    started = time.perf_counter() - began
    gc.collect()
    per_actor = (rss_kib() - before) * 1024 / k
    goal = "goal < 5 s" if k == 100_000 else ""
    report(f"start {k:,} loop actors", started, "s", goal)
    report(f"RSS per live actor ({k:,})", per_actor, "bytes", "goal < 6144")
    began = time.perf_counter()
    futures = [ref.stop(block=False) for ref in refs]
    for future in futures:
        await future
    report(f"stop {k:,} loop actors", time.perf_counter() - began, "s")
    del refs, futures


async def bench_supervised(k: int) -> None:
    sharded = ShardedSupervisor.start(8)
    await which_children(sharded)
    spec = ChildSpec(id="session", start=Echo.start, restart=Restart.TEMPORARY)
    began = time.perf_counter()
    futures = [start_sharded_child(sharded, i, spec) for i in range(k)]
    for future in futures:
        await future
    report(f"start {k:,} children of ShardedSupervisor(8)", time.perf_counter() - began, "s")
    del futures
    began = time.perf_counter()
    await sharded.stop(block=False)
    report("stop it (children stop concurrently)", time.perf_counter() - began, "s")


async def bench_restarts(n: int) -> None:
    ticks = iter(range(10**9))

    def clock() -> float:
        return float(next(ticks))

    incarnations = Incarnations(LoopFuture())
    spec = ChildSpec(id="worker", start=lambda: Worker.start(incarnations))
    sup = Supervisor.start([spec], intensity=Intensity(10, 5), clock=clock)
    ref = await incarnations.next
    samples: list[tuple[int, int]] = []
    logging.disable(logging.CRITICAL)
    try:
        began = time.perf_counter()
        for cycle in range(1, n + 1):
            incarnations.next = LoopFuture()
            ref.tell("boom")
            ref = await incarnations.next
            if cycle % (n // 10) == 0:
                gc.collect()
                samples.append((cycle, rss_kib()))
        elapsed = time.perf_counter() - began
    finally:
        logging.disable(logging.NOTSET)
    report(f"crash/restart cycles ({n:,})", n / elapsed, "cycles/s")
    first, last = samples[0][1], samples[-1][1]
    report("RSS growth from 10% to 100% of the cycles", last - first, "KiB", "goal: flat")
    print("    RSS (KiB) by cycle: " + ", ".join(f"{c:,}: {r:,}" for c, r in samples))
    done = exit_future(sup)
    await sup.stop(block=False)
    await done


def bench_threading_baseline(n: int) -> None:
    sink = ThreadSink.start()
    began = time.perf_counter()
    for i in range(n):
        sink.tell(i)
    sink.ask(None)
    report("pykka ThreadingActor tell (baseline)", n / (time.perf_counter() - began), "msg/s")
    asks = n // 10
    began = time.perf_counter()
    for i in range(asks):
        sink.ask(i)
    report("pykka ThreadingActor ask (baseline)", asks / (time.perf_counter() - began), "asks/s")
    sink.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.actors")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"supervisors runtime: uvloop {uvloop.__version__}, pykka {version('pykka')}")
    steps: list[Callable[[], Any]] = [
        lambda: bench_tell(2_000_000 // scale),
        lambda: bench_ask(200_000 // scale),
        lambda: bench_restarts(100_000 // scale),  # before the big heaps below
        lambda: bench_start_stop(10_000 // scale),
        lambda: bench_start_stop(100_000 // scale),
        lambda: bench_supervised(100_000 // scale),
    ]
    for step in steps:
        uvloop.run(step())
    bench_threading_baseline(200_000 // scale)
    assert not pykka.ActorRegistry.get_all()


if __name__ == "__main__":
    main()
