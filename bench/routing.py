"""Benchmark: subscription matching and retained lookups of actorbroker.routing.

Run with ``python -m bench.routing`` (or ``python bench/routing.py``) from the
project root. Prints figures; asserts nothing. The project goal it checks:
with 100k distinct topics and 10k subscriptions (exact and wildcard filters),
publish routing must stay close to a single-topic run, i.e. matching must not
scan all filters.

Topics are ``site{s}/dev{d}/m{m}`` (100 sites x 100 devices x 10 metrics =
100k). The subscription mix (out of 10k): 70% exact topics, 15%
``site/dev/+``, 10% ``site/+/m``, 4% ``site/#``, 0.9% ``+/dev/m``, 0.1%
``+/+/m``. Each publish goes to a topic drawn uniformly from the 100k.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Iterable, Sequence

from actorbroker.routing.retained import RetainedIndex
from actorbroker.routing.topics import matches
from actorbroker.routing.trie import FilterTrie

SITES, DEVICES, METRICS = 100, 100, 10


def topic_space(sites: int = SITES) -> list[str]:
    return [
        f"site{s}/dev{d}/m{m}" for s in range(sites) for d in range(DEVICES) for m in range(METRICS)
    ]


def subscription_filters(count: int, topics: Sequence[str], rng: random.Random) -> list[str]:
    """``count`` filters in the mix described in the module docstring."""
    sites = len(topics) // (DEVICES * METRICS)
    shares: list[tuple[float, Callable[[], str]]] = [
        (0.70, lambda: rng.choice(topics)),
        (0.15, lambda: f"site{rng.randrange(sites)}/dev{rng.randrange(DEVICES)}/+"),
        (0.10, lambda: f"site{rng.randrange(sites)}/+/m{rng.randrange(METRICS)}"),
        (0.04, lambda: f"site{rng.randrange(sites)}/#"),
        (0.009, lambda: f"+/dev{rng.randrange(DEVICES)}/m{rng.randrange(METRICS)}"),
        (0.001, lambda: f"+/+/m{rng.randrange(METRICS)}"),
    ]
    result: list[str] = []
    for share, make in shares:
        result.extend(make() for _ in range(max(1, round(share * count))))
    return result[:count]


def build(filters: Sequence[str]) -> FilterTrie[str, int]:
    trie: FilterTrie[str, int] = FilterTrie()
    for index, topic_filter in enumerate(filters):
        trie.add(topic_filter, f"client{index}", 1)
    return trie


def run_matches(
    match: Callable[[str], Iterable[object]], publishes: Sequence[str], rounds: int = 3
) -> tuple[float, int]:
    """Best-of-``rounds`` (publishes per second, matched subscriptions per round)."""
    best = float("inf")
    delivered = 0
    for _ in range(rounds):
        delivered = 0
        start = time.perf_counter()
        for topic in publishes:
            for _pair in match(topic):
                delivered += 1
        best = min(best, time.perf_counter() - start)
    return len(publishes) / best, delivered


def line(label: str, rate: float, delivered: int, publishes: int) -> None:
    print(
        f"  {label:<46} {rate:>12,.0f} publishes/s   "
        f"{delivered / publishes:6.2f} matches/publish   {rate * delivered / publishes:>12,.0f} matches/s"
    )


def bench_trie(subs: int, publishes: int, rng: random.Random) -> dict[str, float]:
    topics = topic_space()
    print(f"FilterTrie.match: {len(topics):,} topics, {subs:,} subscriptions, {publishes:,} publishes")
    stream = [rng.choice(topics) for _ in range(publishes)]
    one = "site0/dev0/m0"
    single = build([one])
    rate_single, d_single = run_matches(single.match, [one] * publishes)
    line("single topic, 1 exact subscription", rate_single, d_single, publishes)
    fanout = FilterTrie[str, int]()
    for index in range(6):
        fanout.add(one, f"client{index}", 1)
    rate_fanout, d_fanout = run_matches(fanout.match, [one] * publishes)
    line("single topic, 6 exact subscriptions", rate_fanout, d_fanout, publishes)
    shapes = build([one, "site0/dev0/+", "site0/+/m0", "site0/#", "+/dev0/m0", "+/+/m0"])
    rate_shapes, d_shapes = run_matches(shapes.match, [one] * publishes)
    line("single topic, 1 filter of each of the 6 shapes", rate_shapes, d_shapes, publishes)
    filters = subscription_filters(subs, topics, rng)
    started = time.perf_counter()
    big = build(filters)
    built = time.perf_counter() - started
    rate_big, d_big = run_matches(big.match, stream)
    line(f"100k topics, {subs:,} subscriptions", rate_big, d_big, publishes)
    print(
        f"  (table: {big.filter_count():,} filters, {big.node_count():,} trie nodes, "
        f"built in {built * 1000:.0f} ms)"
    )
    per_match_big = rate_big * d_big / publishes
    print("  ratios, 100k topics / single topic:     publishes/s   matches/s")
    for label, rate, delivered in (
        ("1 exact subscription", rate_single, d_single),
        ("6 exact subscriptions", rate_fanout, d_fanout),
        ("1 filter of each of the 6 shapes", rate_shapes, d_shapes),
    ):
        print(
            f"    vs {label:<34} {rate_big / rate:8.2f}"
            f"   {per_match_big / (rate * delivered / publishes):8.2f}"
        )
    print("  scaling with the number of subscriptions (same topics, same mix):")
    for count in (1_000, 10_000, 100_000):
        table = build(subscription_filters(count, topics, rng))
        rate, delivered = run_matches(table.match, stream[: publishes // 2], rounds=2)
        line(f"{count:,} subscriptions", rate, delivered, publishes // 2)
    scan_publishes = stream[: max(200, publishes // 500)]

    def scan(topic: str) -> list[str]:
        return [f for f in filters if matches(f, topic)]

    rate_scan, d_scan = run_matches(scan, scan_publishes, rounds=1)
    line(f"for reference: scanning all {subs:,} filters", rate_scan, d_scan, len(scan_publishes))
    return {
        "single": rate_single,
        "fanout": rate_fanout,
        "shapes": rate_shapes,
        "big": rate_big,
        "scan": rate_scan,
    }


def bench_retained(rng: random.Random) -> None:
    topics = topic_space()
    index: RetainedIndex[bytes] = RetainedIndex()
    started = time.perf_counter()
    for topic in topics:
        index.set(topic, b"x")
    built = time.perf_counter() - started
    print(
        f"RetainedIndex.match: {len(index):,} retained topics "
        f"(built in {built * 1000:.0f} ms, {index.node_count():,} nodes)"
    )
    queries: list[tuple[str, Callable[[], str]]] = [
        ("exact topic", lambda: f"site{rng.randrange(SITES)}/dev{rng.randrange(DEVICES)}/m1"),
        ("site/dev/+ (10 hits)", lambda: f"site{rng.randrange(SITES)}/dev{rng.randrange(DEVICES)}/+"),
        ("site/+/m (100 hits)", lambda: f"site{rng.randrange(SITES)}/+/m{rng.randrange(METRICS)}"),
        ("site/# (1000 hits)", lambda: f"site{rng.randrange(SITES)}/#"),
        ("+/dev/m (100 hits)", lambda: f"+/dev{rng.randrange(DEVICES)}/m{rng.randrange(METRICS)}"),
        ("# (100k hits)", lambda: "#"),
    ]
    for label, make in queries:
        filters = [make() for _ in range(20 if label.startswith("#") else 2000)]
        rate, delivered = run_matches(index.match, filters, rounds=2)
        print(
            f"  {label:<24} {rate:>10,.0f} queries/s  {1e6 / rate:10.1f} us/query"
            f"  {rate * delivered / len(filters):>12,.0f} topics/s"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--publishes", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    bench_trie(args.subscriptions, args.publishes, rng)
    print()
    bench_retained(rng)


if __name__ == "__main__":
    main()
