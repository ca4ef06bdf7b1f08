"""Load generator: delivery accounting and latency histograms. Stdlib only.

A *link* is one (subscriber connection, publisher) pair. In a dense link the
subscriber should see every sequence number of the publisher, 0, 1, 2, ...
(one topic, or one filter covering all of the publisher's topics): gaps,
duplicates and reordering are told apart exactly. In a sparse link (routes:
the subscriber sees the publisher's messages on the topics its filter
matches) only the count and the order are checked; the count expected is
worked out by the driver from what the publisher sent.

Latency is kept in a histogram: 1 us buckets below 10 ms, 1 ms buckets above,
so that merging processes and taking percentiles is exact to the bucket.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FINE_BUCKETS", "Histogram", "LinkTable", "merge_links"]

#: Number of 1-microsecond buckets; slower deliveries go to 1 ms buckets.
FINE_BUCKETS = 10_000
#: Gaps remembered per link to tell late arrivals from duplicates.
MAX_MISSING = 200_000


class Histogram:
    """Latency histogram in microseconds; ``fine[us]`` below 10 ms, ``coarse[ms]`` above."""

    __slots__ = ("fine", "coarse")

    def __init__(self) -> None:
        self.fine = [0] * FINE_BUCKETS
        self.coarse: dict[int, int] = {}

    def add_slow(self, us: int) -> None:
        """Record one latency of ``us`` >= FINE_BUCKETS microseconds."""
        ms = us // 1000
        self.coarse[ms] = self.coarse.get(ms, 0) + 1

    def to_json(self) -> dict[str, Any]:
        """Sparse form: {"fine": {us: n}, "coarse": {ms: n}}."""
        return {"fine": {i: n for i, n in enumerate(self.fine) if n},
                "coarse": dict(self.coarse)}

    @staticmethod
    def percentiles(parts: Iterable[Mapping[str, Any]],
                    points: Iterable[float] = (50.0, 99.0, 99.9)) -> dict[str, float]:
        """Merge sparse histograms; return count, mean and the percentiles in ms."""
        buckets: dict[float, int] = {}
        for part in parts:
            for us, n in part["fine"].items():
                key = int(us) + 0.5
                buckets[key] = buckets.get(key, 0) + n
            for ms, n in part["coarse"].items():
                key = int(ms) * 1000 + 500.0
                buckets[key] = buckets.get(key, 0) + n
        total = sum(buckets.values())
        out: dict[str, float] = {"count": float(total)}
        if not total:
            return out
        ordered = sorted(buckets.items())
        out["mean_ms"] = sum(k * n for k, n in ordered) / total / 1000
        for p in points:
            rank = p / 100 * total
            seen = 0
            for us, n in ordered:
                seen += n
                if seen >= rank:
                    out[f"p{p:g}_ms"] = us / 1000
                    break
        out["max_ms"] = ordered[-1][0] / 1000
        return out


class LinkTable:
    """Per-publisher accounting of one subscriber connection.

    Lists indexed by publisher id, for speed in the receive path, which
    updates ``count``, ``last`` and calls :meth:`irregular` when a sequence
    number is not the next one.
    """

    __slots__ = ("dense", "count", "last", "dups", "reordered", "gaps", "_missing",
                 "overflow")

    def __init__(self, publishers: int, dense: bool) -> None:
        self.dense = dense
        self.count = [0] * publishers
        self.last = [-1] * publishers       # highest sequence number seen
        self.dups = [0] * publishers        # dense: seen twice; sparse: went backwards
        self.reordered = [0] * publishers   # dense: filled a gap late
        self.gaps = [0] * publishers        # dense: numbers skipped (not yet filled)
        self._missing: list[set[int]] = [set() for _ in range(publishers)]
        self.overflow = False               # too many gaps to tell dups from late arrivals

    def irregular(self, pub: int, seq: int) -> None:
        """Account ``seq`` from ``pub`` when it is not ``last + 1`` (count already bumped)."""
        last = self.last[pub]
        if not self.dense:
            if seq <= last:
                self.dups[pub] += 1
            else:
                self.last[pub] = seq
            return
        missing = self._missing[pub]
        if seq > last:
            gap = seq - last - 1
            self.gaps[pub] += gap
            if len(missing) + gap <= MAX_MISSING:
                missing.update(range(last + 1, seq))
            else:
                self.overflow = True
            self.last[pub] = seq
        elif seq in missing:
            missing.discard(seq)
            self.gaps[pub] -= 1
            self.reordered[pub] += 1
        else:
            self.dups[pub] += 1

    def to_json(self) -> dict[str, list[int] | bool]:
        return {"count": list(self.count), "last": list(self.last), "dups": list(self.dups),
                "reordered": list(self.reordered), "gaps": list(self.gaps),
                "overflow": self.overflow}


def merge_links(links: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Totals over several LinkTable.to_json() results."""
    total = {"received": 0, "dups": 0, "reordered": 0, "gaps": 0, "overflow": 0}
    for link in links:
        total["received"] += sum(link["count"])
        total["dups"] += sum(link["dups"])
        total["reordered"] += sum(link["reordered"])
        total["gaps"] += sum(link["gaps"])
        total["overflow"] += int(bool(link["overflow"]))
    return total
