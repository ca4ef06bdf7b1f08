"""Load generator: the driver that spawns, synchronises and checks the workers. Stdlib and bench.mqttload.

:func:`run_load` runs one :class:`~.plan.LoadPlan` against a broker that is
already listening: it spawns one process per worker plan (``spawn``
context), waits with them at the start barrier, and collects their reports.
Every wait is bounded; a worker that fails or dies makes the run fail with
its error, never hang. ``rss`` (optional) reads the broker's resident
memory, for the figures per connection and per routing table.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
from collections.abc import Callable
from time import monotonic
from typing import Any

from .plan import LoadPlan
from .stats import Histogram, merge_links
from .workers import Shared, worker_main

__all__ = ["LoadError", "run_load"]

_SPAWN_ALLOWANCE = 30.0   # seconds for the workers to start and import


class LoadError(RuntimeError):
    """A worker failed, died or did not report in time.

    ``phase`` is "setup" (connecting and subscribing, before the start
    barrier) or "run".
    """

    def __init__(self, message: str, phase: str = "run") -> None:
        super().__init__(message)
        self.phase = phase


class _Inbox:
    """The driver's view of the result queue, with bounded waits."""

    def __init__(self, results: Any, procs: list[Any]) -> None:
        self.results = results
        self.procs = procs
        self.messages: list[tuple[str, str, int, Any]] = []

    def _take(self, timeout: float) -> None:
        try:
            self.messages.append(self.results.get(timeout=timeout))
        except queue.Empty:
            pass
        errors = [m for m in self.messages if m[0] == "error"]
        if errors:
            raise LoadError("; ".join(f"{r}{p}: {e}" for _, r, p, e in errors))

    def wait(self, kind: str, role: str | None, count: int, timeout: float) -> list[Any]:
        """Payloads of ``count`` messages of ``kind`` from workers of ``role`` (None: any)."""
        deadline = monotonic() + timeout
        while True:
            got = [m[3] for m in self.messages if m[0] == kind and role in (None, m[1])]
            if len(got) >= count:
                return got
            if monotonic() > deadline:
                raise LoadError(f"{count - len(got)} {role or ''} worker(s) did not report "
                                f"'{kind}' within {timeout:.0f} s")
            dead = [p for p in self.procs if p.exitcode not in (None, 0)]
            self._take(0.1)
            if dead and not any(m[0] == "error" for m in self.messages):
                self._take(0.5)
                raise LoadError(f"worker process(es) died: exit codes "
                                f"{[p.exitcode for p in dead]}")


def _settled_rss(rss: Callable[[], int], limit: float = 3.0) -> int:
    """RSS once it stops moving (two readings 0.2 s apart within 0.5%), or after ``limit`` s."""
    deadline = monotonic() + limit
    before = rss()
    while monotonic() < deadline:
        threading.Event().wait(0.2)
        now = rss()
        if abs(now - before) <= before * 0.005:
            return now
        before = now
    return before


def run_load(plan: LoadPlan, rss: Callable[[], int] | None = None,
             cpu: Callable[[], float] | None = None,
             on_start: Callable[[], object] | None = None) -> dict[str, Any]:
    """Run ``plan``; return its figures and delivery check (raises LoadError on failure).

    ``rss`` and ``cpu`` read the broker's resident bytes and CPU seconds;
    ``on_start`` is called as the start barrier opens.
    """
    ctx = mp.get_context("spawn")
    publishers = max(1, plan.publishers)
    shared = Shared(
        barrier=ctx.Barrier(len(plan.workers) + 1), pubs_done=ctx.Event(),
        release=ctx.Event(), progress=ctx.RawArray("q", max(1, plan.sub_procs) * publishers),
        expected=ctx.RawArray("q", publishers), results=ctx.Queue(),
    )
    procs = [ctx.Process(target=worker_main, args=(w, shared), daemon=True,
                         name=f"mqttload-{w.role}{w.proc}") for w in plan.workers]
    setup = max(w.setup_timeout for w in plan.workers) + _SPAWN_ALLOWANCE
    span = max(w.duration + w.drain_timeout for w in plan.workers) + 30.0
    for pub, n in enumerate(plan.preset_expected or ()):
        shared.expected[pub] = n
    inbox = _Inbox(shared.results, procs)
    out: dict[str, Any] = {}
    for p in procs:
        p.start()
    try:
        if rss is not None:
            out["rss_before"] = rss()
        try:
            inbox.wait("ready", None, len(procs), setup)
            try:
                shared.barrier.wait(_SPAWN_ALLOWANCE)
            except threading.BrokenBarrierError:
                inbox._take(2.0)
                raise LoadError("a worker failed before the start barrier") from None
        except LoadError as exc:
            raise LoadError(f"setup: {exc}", "setup") from None
        if on_start is not None:
            on_start()
        cpu0 = cpu() if cpu is not None else 0.0
        if rss is not None and plan.kind == "flow":
            out["rss_setup"] = rss()
        if plan.kind == "conns":
            connected = inbox.wait("connected", "idle", len(procs), setup)
            if rss is not None:
                out["rss_connected"] = _settled_rss(rss)
            shared.release.set()
            results = inbox.wait("result", "idle", len(procs), setup)
            out.update(_conns_figures(connected, results, out))
        else:
            n_pub = sum(1 for w in plan.workers if w.role == "pub")
            pubs = inbox.wait("result", "pub", n_pub, span)
            shared.pubs_done.set()
            subs = inbox.wait("result", "sub", plan.sub_procs, span)
            if cpu is not None:
                out["cpu_broker_s"] = cpu() - cpu0
            if rss is not None:
                out["rss_after"] = rss()
            out.update(_flow_figures(plan, pubs, subs))
    finally:
        shared.release.set()
        shared.pubs_done.set()
        for p in procs:
            p.join(10.0)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5.0)
    return out


def _conns_figures(connected: list[Any], results: list[Any],
                   out: dict[str, Any]) -> dict[str, Any]:
    n = sum(r["connections"] for r in connected)
    t0 = min(r["t0"] for r in connected)
    t_done = max(r["t_done"] for r in connected)
    fig: dict[str, Any] = {
        "connections": n, "connect_s": (t_done - t0) / 1e9,
        "conns_per_s": n / max((t_done - t0) / 1e9, 1e-9),
        "lost_while_idle": sum(r["lost_while_idle"] for r in results),
        "errors": [e for r in results for e in r["errors"]][:5],
    }
    if "rss_connected" in out and n:
        fig["rss_per_conn_kib"] = (out["rss_connected"] - out["rss_before"]) / n / 1024
    fig["ok"] = not fig["errors"] and fig["lost_while_idle"] == 0
    return fig


def _flow_figures(plan: LoadPlan, pubs: list[Any], subs: list[Any]) -> dict[str, Any]:
    pub_rows = [row for r in pubs for row in r["pubs"]]
    sent = [0] * max(1, plan.publishers)
    for row in pub_rows:
        sent[row["pub_id"]] += row["sent"]
    assert plan.expected is not None
    expected = plan.expected(sent)
    lost = extra = 0
    links: dict[int, Any] = {}
    for r in subs:
        links.update({int(k): v for k, v in r["links"].items()})
    dense = all(w.dense for w in plan.workers)
    for sub, per_pub in expected.items():
        link = links.get(sub)
        for pub, want in per_pub.items():
            got = link["count"][pub] if link else 0
            unique = got - (link["dups"][pub] if link and dense else 0)
            lost += max(0, want - unique)
            extra += max(0, unique - want)
    totals = merge_links(links.values())
    t0 = min([r["t0"] for r in pubs] + [r["t0"] for r in subs])
    last = max([r["last_ns"] for r in subs] + [row["t_end"] for row in pub_rows])
    t_end = max([row["t_end"] for row in pub_rows], default=last)
    elapsed = max((last - t0) / 1e9, 1e-9)
    total_sent = sum(sent)
    errors = [e for row in pub_rows for e in row["errors"]] + [e for r in subs for e in r["errors"]]
    fig: dict[str, Any] = {
        "sent": total_sent, "expected": sum(sum(p.values()) for p in expected.values()),
        "received": totals["received"], "lost": lost, "extra": extra,
        "duplicates": totals["dups"] if dense else 0,
        "reordered": totals["reordered"] if dense else totals["dups"],
        "acked": sum(row["acked"] for row in pub_rows),
        "unacked": sum(row["unacked"] for row in pub_rows),
        "writes": sum(row["writes"] for row in pub_rows),
        "reads": sum(r["reads"] for r in subs),
        "elapsed_s": elapsed, "publish_s": (t_end - t0) / 1e9,
        "publishes_per_s": total_sent / elapsed,
        "publisher_rate": total_sent / max((t_end - t0) / 1e9, 1e-9),
        "deliveries_per_s": totals["received"] / elapsed,
        "stopped_by": sorted({r["stopped_by"] for r in subs}),
        "latency": Histogram.percentiles([r["latency"] for r in subs]),
        "cpu_pub_s": sum(r["cpu_s"] for r in pubs), "cpu_sub_s": sum(r["cpu_s"] for r in subs),
        "errors": errors[:5],
    }
    if totals["overflow"]:
        fig["errors"].append("too many gaps to tell duplicates from late arrivals")
    qos1_fail = plan.qos >= 1 and (lost or fig["unacked"] or fig["acked"] != total_sent)
    fig["ok"] = not fig["errors"] and not qos1_fail and not (dense and fig["duplicates"])
    return fig
