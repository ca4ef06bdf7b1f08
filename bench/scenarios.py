"""Benchmark harness: the scenarios of the broker comparison. Imports the stdlib and bench.mqttload.

Each scenario builds a :class:`~bench.mqttload.plan.LoadPlan` for a broker
on ``host:port``; ``quick`` shrinks durations and sizes, not the shapes.
Throughput scenarios publish for a fixed time (count as a safety bound) and
report what the subscribers received per second, from the start barrier to
the last delivery. The ``defaults-*`` scenarios run both brokers with their
default limits and a generator without end-to-end credit (publishers go as
fast as TCP and their window allow), a fixed count per publisher: their
figure is the loss beside the throughput.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.mqttload.plan import LoadPlan, PubSpec, SubSpec, WorkerPlan

__all__ = ["SCENARIOS", "Scenario", "build"]

_CAP = 50_000_000            # count bound per publisher (the clock ends the run first)
#: End-to-end credit: deliveries in flight (sent, not yet counted by a subscriber),
#: shared out between the publishers; enough for ~50 ms at 300k deliveries/s.
_CREDIT = 16_000
_MIN_CREDIT = 256


@dataclass(frozen=True, slots=True)
class Scenario:
    """``metric`` names the headline figure in the results; ``higher`` whether more is better."""

    name: str
    title: str
    metric: str
    unit: str
    higher: bool
    make: Callable[[str, int, bool], LoadPlan]
    #: Start the brokers with their default limits (else raised so that nothing drops).
    defaults: bool = False


def _split(items: Sequence[object], parts: int) -> list[list[object]]:
    parts = max(1, min(parts, len(items)))
    return [list(items[i::parts]) for i in range(parts)]


def _flow(name: str, host: str, port: int, pubs: list[PubSpec], subs: list[SubSpec],
          sub_hears: dict[int, dict[int, None]] | None, *, pub_procs: int, sub_procs: int,
          duration: float, dense: bool = True, setup: float = 30.0,
          expected: Callable[[Sequence[int]], dict[int, dict[int, int]]] | None = None,
          latency_skip: int = 0, drain: float = 2.0, credit: bool = True) -> LoadPlan:
    """A publishers -> subscribers plan; ``sub_hears[sub]`` lists the publishers a sub gets in full."""
    msg = len(pubs[0].topics[0]) + pubs[0].payload + 4
    batch = max(4, min(128, 16384 // msg))
    common = dict(host=host, port=port, publishers=len(pubs), dense=dense, duration=duration,
                  setup_timeout=setup, drain_timeout=drain, batch=batch,
                  latency_skip=latency_skip,
                  credit=max(_MIN_CREDIT, _CREDIT // len(pubs)) if credit else 0)
    sub_groups = _split(subs, sub_procs)
    workers = [WorkerPlan("sub", i, sub_procs=len(sub_groups), subs=tuple(g), **common)  # type: ignore[arg-type]
               for i, g in enumerate(sub_groups)]
    workers += [WorkerPlan("pub", i, sub_procs=len(sub_groups), pubs=tuple(g), **common)  # type: ignore[arg-type]
                for i, g in enumerate(_split(pubs, pub_procs))]
    if expected is None:
        assert sub_hears is not None

        def expected(sent: Sequence[int]) -> dict[int, dict[int, int]]:
            return {s: {p: sent[p] for p in hears} for s, hears in sub_hears.items()}
    return LoadPlan(name, "flow", workers, expected, qos=pubs[0].qos, publishers=len(pubs))


def _fanin(payload: int) -> Callable[[str, int, bool], LoadPlan]:
    def make(host: str, port: int, quick: bool) -> LoadPlan:
        pubs = [PubSpec(i, f"fanin-p{i}", (f"bench/fanin/{i}",), 0, payload, _CAP, (1,))
                for i in range(8)]
        subs = [SubSpec(0, "fanin-s0", ("bench/fanin/+",), 0)]
        return _flow("fanin", host, port, pubs, subs, {0: dict.fromkeys(range(8))},
                     pub_procs=2, sub_procs=1, duration=1.0 if quick else 3.0)
    return make


def _pairs(qos: int) -> Callable[[str, int, bool], LoadPlan]:
    def make(host: str, port: int, quick: bool) -> LoadPlan:
        pubs = [PubSpec(i, f"pair-p{i}", (f"bench/pair/{i}",), qos, 16, _CAP, (1,), window=100)
                for i in range(50)]
        subs = [SubSpec(i, f"pair-s{i}", (f"bench/pair/{i}",), qos) for i in range(50)]
        return _flow(f"pairs-q{qos}", host, port, pubs, subs, {i: {i: None} for i in range(50)},
                     pub_procs=2, sub_procs=2, duration=1.0 if quick else 3.0)
    return make


def _defaults_q1(host: str, port: int, quick: bool) -> LoadPlan:
    """The issue's first run: 50 QoS 1 pairs, 2,000 messages each, 100 unacknowledged."""
    count = 500 if quick else 2000
    pubs = [PubSpec(i, f"dq1-p{i}", (f"bench/dq1/{i}",), 1, 16, count, (1,), window=100)
            for i in range(50)]
    subs = [SubSpec(i, f"dq1-s{i}", (f"bench/dq1/{i}",), 1) for i in range(50)]
    return _flow("defaults-q1", host, port, pubs, subs, {i: {i: None} for i in range(50)},
                 pub_procs=2, sub_procs=2, duration=60.0, drain=5.0, credit=False)


def _defaults_q0(host: str, port: int, quick: bool) -> LoadPlan:
    """The issue's second run: 8 QoS 0 publishers, 20,000 each, into one wildcard subscriber."""
    count = 5000 if quick else 20_000
    pubs = [PubSpec(i, f"dq0-p{i}", (f"bench/dq0/{i}",), 0, 16, count, (1,)) for i in range(8)]
    subs = [SubSpec(0, "dq0-s0", ("bench/dq0/+",), 0)]
    return _flow("defaults-q0", host, port, pubs, subs, {0: dict.fromkeys(range(8))},
                 pub_procs=2, sub_procs=1, duration=60.0, drain=5.0, credit=False)


def _fanout(host: str, port: int, quick: bool) -> LoadPlan:
    pubs = [PubSpec(0, "fanout-p0", ("bench/fanout",), 0, 16, _CAP, (50,))]
    subs = [SubSpec(i, f"fanout-s{i}", ("bench/fanout",), 0) for i in range(50)]
    return _flow("fanout", host, port, pubs, subs, {i: {0: None} for i in range(50)},
                 pub_procs=1, sub_procs=2, duration=1.0 if quick else 3.0)


def _latency(qos: int) -> Callable[[str, int, bool], LoadPlan]:
    def make(host: str, port: int, quick: bool) -> LoadPlan:
        seconds = 2.0 if quick else 5.0
        count = int(1000 * seconds)
        pubs = [PubSpec(0, f"lat{qos}-p0", ("bench/latency",), qos, 16, count, (1,), rate=1000.0)]
        subs = [SubSpec(0, f"lat{qos}-s0", ("bench/latency",), qos)]
        return _flow(f"latency-q{qos}", host, port, pubs, subs, {0: {0: None}}, pub_procs=1,
                     sub_procs=1, duration=seconds + 1.0, latency_skip=100)
    return make


def _conns(host: str, port: int, quick: bool) -> LoadPlan:
    total = 1000 if quick else 5000
    workers = [WorkerPlan("idle", i, host, port, publishers=1, sub_procs=0, idle=total // 2,
                          idle_prefix="conns", setup_timeout=60.0, concurrency=50)
               for i in range(2)]
    return LoadPlan("conns", "conns", workers)


# routes: topics site{s}/dev{d}/m{m}, the subscription mix of bench/routing.py
_DEVICES, _METRICS = 100, 10
_MIX = ((0.70, "exact"), (0.15, "sd+"), (0.10, "s+m"), (0.04, "s#"), (0.009, "+dm"),
        (0.001, "++m"))


def _route_filter(kind: str, rng: random.Random, sites: int) -> tuple[str, range | list[int]]:
    """A filter of ``kind`` and the indices of the topics it matches."""
    s, d, m = rng.randrange(sites), rng.randrange(_DEVICES), rng.randrange(_METRICS)
    dm = _DEVICES * _METRICS
    if kind == "exact":
        return f"site{s}/dev{d}/m{m}", [s * dm + d * _METRICS + m]
    if kind == "sd+":
        return f"site{s}/dev{d}/+", range(s * dm + d * _METRICS, s * dm + (d + 1) * _METRICS)
    if kind == "s+m":
        return f"site{s}/+/m{m}", range(s * dm + m, (s + 1) * dm, _METRICS)
    if kind == "s#":
        return f"site{s}/#", range(s * dm, (s + 1) * dm)
    if kind == "+dm":
        return f"+/dev{d}/m{m}", range(d * _METRICS + m, sites * dm, dm)
    return f"+/+/m{m}", range(m, sites * dm, _METRICS)


def _routes(host: str, port: int, quick: bool) -> LoadPlan:
    sites, n_subs = (20, 2000) if quick else (100, 10_000)
    topics = tuple(f"site{s}/dev{d}/m{m}" for s in range(sites) for d in range(_DEVICES)
                   for m in range(_METRICS))
    rng = random.Random(20240601)
    kinds = [k for share, k in _MIX for _ in range(round(share * n_subs))]
    subs, matched = [], []
    fan = [0] * len(topics)
    for i, kind in enumerate(kinds):
        flt, hits = _route_filter(kind, rng, sites)
        subs.append(SubSpec(i, f"routes-s{i}", (flt,), 0))
        matched.append(hits)
        for t in hits:
            fan[t] += 1
    cycles = []
    for p in range(2):
        order = list(range(len(topics)))
        random.Random(p).shuffle(order)
        cycles.append(tuple(order))
    pubs = [PubSpec(p, f"routes-p{p}", topics, 0, 16, _CAP, tuple(fan), cycle=cycles[p])
            for p in range(2)]

    def expected(sent: Sequence[int]) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {i: {} for i in range(len(subs))}
        for p, n in enumerate(sent):
            per_topic = [n // len(topics)] * len(topics)
            for t in cycles[p][: n % len(topics)]:
                per_topic[t] += 1
            for i, hits in enumerate(matched):
                out[i][p] = sum([per_topic[t] for t in hits])
        return out

    plan = _flow("routes", host, port, pubs, subs, None, pub_procs=2, sub_procs=2,
                 duration=1.5 if quick else 3.0, dense=False, setup=60.0, expected=expected)
    plan.info = {"topics": len(topics), "subscribers": len(subs),
                 "deliveries_per_publish": sum(fan) / len(topics)}
    return plan


def _routes_1topic(host: str, port: int, quick: bool) -> LoadPlan:
    topic = "site0/dev0/m0"
    filters = ["site0/dev0/m0", "site0/dev0/+", "site0/+/m0", "site0/#", "+/dev0/m0", "+/+/m0"]
    pubs = [PubSpec(p, f"route1-p{p}", (topic,), 0, 16, _CAP, (6,)) for p in range(2)]
    subs = [SubSpec(i, f"route1-s{i}", (f,), 0) for i, f in enumerate(filters)]
    return _flow("routes-1topic", host, port, pubs, subs,
                 {i: dict.fromkeys(range(2)) for i in range(6)}, pub_procs=2, sub_procs=2,
                 duration=1.5 if quick else 3.0)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("fanin", "fan-in: 8 publishers -> 1 subscriber on bench/fanin/+, QoS 0, 16 B",
             "deliveries_per_s", "msg/s", True, _fanin(16)),
    Scenario("fanin-1k", "fan-in, 1 KiB payloads", "deliveries_per_s", "msg/s", True,
             _fanin(1024)),
    Scenario("pairs-q0", "50 publisher/subscriber pairs on distinct topics, QoS 0",
             "deliveries_per_s", "msg/s", True, _pairs(0)),
    Scenario("pairs-q1", "50 pairs, QoS 1, 100 in flight per publisher",
             "deliveries_per_s", "msg/s", True, _pairs(1)),
    Scenario("fanout", "fan-out: 1 publisher -> 50 subscribers, QoS 0",
             "deliveries_per_s", "deliveries/s", True, _fanout),
    Scenario("conns", "idle connections: broker RSS per connection",
             "rss_per_conn_kib", "KiB/conn", False, _conns),
    Scenario("latency-q0", "latency at 1,000 msg/s, QoS 0", "latency.p50_ms", "ms", False,
             _latency(0)),
    Scenario("latency-q1", "latency at 1,000 msg/s, QoS 1", "latency.p50_ms", "ms", False,
             _latency(1)),
    Scenario("routes", "100k topics, 10k subscribers (exact and wildcard filters), QoS 0",
             "publishes_per_s", "publishes/s", True, _routes),
    Scenario("routes-1topic", "one topic, 6 subscribers (one filter of each shape), QoS 0",
             "publishes_per_s", "publishes/s", True, _routes_1topic),
    Scenario("defaults-q1", "default limits, no end-to-end credit: 50 QoS 1 pairs, 2,000 "
             "each, 100 unacknowledged", "deliveries_per_s", "msg/s", True, _defaults_q1,
             defaults=True),
    Scenario("defaults-q0", "default limits, no end-to-end credit: 8 QoS 0 publishers, "
             "20,000 each -> 1 subscriber of bench/dq0/+", "deliveries_per_s", "msg/s", True,
             _defaults_q0, defaults=True),
)}


def build(name: str, host: str, port: int, quick: bool) -> LoadPlan:
    """The plan of scenario ``name`` against ``host:port``."""
    plan = SCENARIOS[name].make(host, port, quick)
    plan.name = name
    return plan
