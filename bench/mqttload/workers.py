"""Load generator: worker processes (spawned by the driver). Imports asyncio, uvloop, the stdlib and bench.mqttload.

:func:`worker_main` is the process entry point. Every worker connects its
clients (subscribers also subscribe), then waits at the shared start
barrier with the driver and every other worker, so that no publisher starts
before every subscription is in place. Each loop is bounded by a count and
a deadline. Results go back to the driver on a queue as plain dicts:
``("ready" | "connected" | "result" | "error", role, proc, payload)``.

Shared memory (``multiprocessing.RawArray`` of int64):

* ``progress[proc * publishers + pub]``: deliveries from ``pub`` counted by
  subscriber process ``proc``, refreshed every 2 ms;
* ``expected[pub]``: deliveries that ``pub``'s messages sent so far should
  produce; subscribers stop once the totals meet after the publishers are done.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from dataclasses import dataclass
from time import monotonic, monotonic_ns, process_time
from typing import Any, TypeVar

from .clients import BaseConn, PublisherConn, SubscriberConn, open_conn
from .plan import WorkerPlan
from .stats import Histogram, LinkTable

__all__ = ["Shared", "worker_main"]

T = TypeVar("T")
_TICK = 0.002


@dataclass(frozen=True)
class Shared:
    """Synchronisation objects shared by the driver and its workers."""

    barrier: Any        # multiprocessing Barrier: every worker + the driver
    pubs_done: Any      # Event set by the driver once every publisher has reported
    release: Any        # Event: idle connections may close (after the RSS reading)
    progress: Any       # RawArray('q', sub_procs * publishers)
    expected: Any       # RawArray('q', publishers)
    results: Any        # Queue back to the driver


def worker_main(plan: WorkerPlan, shared: Shared) -> None:
    """Process entry point: run the plan on uvloop and report to the driver."""
    import uvloop

    try:
        uvloop.run(_ROLES[plan.role](plan, shared))
    except BaseException as exc:  # report anything, the driver decides
        try:
            shared.barrier.abort()
        finally:
            shared.results.put(("error", plan.role, plan.proc,
                                f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-6)}"))


async def _bounded_all(factories: Sequence[Callable[[], Awaitable[T]]], concurrency: int,
                       timeout: float) -> list[T]:
    """Run the coroutine factories with at most ``concurrency`` at once, within ``timeout``."""
    results: list[T | None] = [None] * len(factories)
    it = iter(enumerate(factories))

    async def lane() -> None:
        for i, make in it:
            results[i] = await make()

    lanes = [asyncio.ensure_future(lane()) for _ in range(max(1, min(concurrency, len(factories))))]
    try:
        await asyncio.wait_for(asyncio.gather(*lanes), timeout)
    except asyncio.TimeoutError:
        done = sum(r is not None for r in results)
        raise TimeoutError(f"{done} of {len(factories)} connections set up within "
                           f"{timeout:.0f} s") from None
    except BaseException:
        for lane_task in lanes:
            lane_task.cancel()
        raise
    return results  # type: ignore[return-value]


async def _barrier(shared: Shared, timeout: float) -> int:
    """Wait at the start barrier without blocking the loop; return the start time (ns)."""
    await asyncio.to_thread(shared.barrier.wait, timeout)
    return monotonic_ns()


async def _close_all(conns: Sequence[BaseConn]) -> None:
    for conn in conns:
        conn.close()
    await asyncio.sleep(0)


async def _run_sub(plan: WorkerPlan, shared: Shared) -> None:
    hist = Histogram()
    totals = [0] * plan.publishers
    base = plan.proc * plan.publishers
    conns: list[SubscriberConn] = []

    async def make(spec: Any) -> SubscriberConn:
        conn = SubscriberConn(LinkTable(plan.publishers, plan.dense), hist, totals,
                              plan.latency_skip)
        await open_conn(conn, plan.host, plan.port, spec.client_id, plan.setup_timeout)
        conns.append(conn)
        await conn.subscribe(spec.filters, spec.qos, plan.setup_timeout)
        return conn

    ordered = await _bounded_all([partial(make, s) for s in plan.subs], plan.concurrency,
                                 plan.setup_timeout)
    shared.results.put(("ready", plan.role, plan.proc, len(ordered)))
    t0 = await _barrier(shared, plan.setup_timeout)
    cpu0 = process_time()
    progress, expected = shared.progress, shared.expected
    hard_deadline = monotonic() + plan.duration + plan.drain_timeout + 10.0
    last_total, last_change = -1, monotonic()
    stopped_by = "deadline"
    while monotonic() < hard_deadline:
        for pub, n in enumerate(totals):
            progress[base + pub] = n
        now = monotonic()
        total = sum(totals)
        if total != last_total:
            last_total, last_change = total, now
        if shared.pubs_done.is_set():
            if sum(progress) >= sum(expected):
                stopped_by = "complete"
                break
            if now - last_change > plan.drain_timeout:
                stopped_by = "drain timeout"
                break
        await asyncio.sleep(_TICK)
    for pub, n in enumerate(totals):
        progress[base + pub] = n
    errors = [e for c in ordered for e in c.errors][:5]
    await _close_all(ordered)
    shared.results.put(("result", plan.role, plan.proc, {
        "t0": t0, "stopped_by": stopped_by, "cpu_s": process_time() - cpu0,
        "first_ns": min((c.first_ns for c in ordered if c.first_ns), default=0),
        "last_ns": max((c.last_ns for c in ordered), default=0),
        "links": {spec.index: c.links.to_json() for spec, c in zip(plan.subs, ordered)},
        "latency": hist.to_json(), "errors": errors, "reads": sum(c.reads for c in ordered),
    }))


async def _run_pub(plan: WorkerPlan, shared: Shared) -> None:
    slots = [p * plan.publishers for p in range(plan.sub_procs)]

    async def make(spec: Any) -> PublisherConn:
        conn = PublisherConn(spec, plan.batch, plan.credit, shared.progress, shared.expected,
                             [s + spec.pub_id for s in slots])
        return await open_conn(conn, plan.host, plan.port, spec.client_id,  # type: ignore[return-value]
                               plan.setup_timeout)

    conns = await _bounded_all([partial(make, s) for s in plan.pubs], plan.concurrency,
                               plan.setup_timeout)
    shared.results.put(("ready", plan.role, plan.proc, len(conns)))
    t0 = await _barrier(shared, plan.setup_timeout)
    cpu0 = process_time()
    grace = plan.drain_timeout + 5.0
    for conn in conns:
        conn.start(plan.duration, grace)
    await asyncio.wait_for(asyncio.gather(*(c.finished for c in conns)),
                           plan.duration + grace + 5.0)
    results = [c.result() for c in conns]
    cpu = process_time() - cpu0
    await _close_all(conns)
    shared.results.put(("result", plan.role, plan.proc, {"t0": t0, "pubs": results,
                                                         "cpu_s": cpu}))


async def _run_idle(plan: WorkerPlan, shared: Shared) -> None:
    shared.results.put(("ready", plan.role, plan.proc, 0))
    t0 = await _barrier(shared, plan.setup_timeout)
    conns: list[BaseConn] = []

    async def make(i: int) -> None:
        conn = BaseConn()
        conns.append(conn)
        await open_conn(conn, plan.host, plan.port, f"{plan.idle_prefix}-{plan.proc}-{i}",
                        plan.setup_timeout)

    await _bounded_all([partial(make, i) for i in range(plan.idle)], plan.concurrency,
                       plan.setup_timeout)
    t_done = monotonic_ns()
    shared.results.put(("connected", plan.role, plan.proc, {"t0": t0, "t_done": t_done,
                                                            "connections": len(conns)}))
    released = await asyncio.to_thread(shared.release.wait, plan.setup_timeout)
    lost = sum(1 for c in conns if c.closed.done())
    errors = [e for c in conns for e in c.errors][:5]
    await _close_all(conns)
    shared.results.put(("result", plan.role, plan.proc, {
        "t0": t0, "t_done": t_done, "connections": len(conns), "lost_while_idle": lost,
        "released": bool(released), "errors": errors}))


_ROLES: dict[str, Callable[[WorkerPlan, Shared], Coroutine[Any, Any, None]]] = {
    "sub": _run_sub, "pub": _run_pub, "idle": _run_idle,
}
