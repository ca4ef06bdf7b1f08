"""Process layer: the garbage collector's settings for a long-running broker process. Stdlib only.

CPython's cyclic collector runs a young collection every 700 allocations of
container objects (net), an older one every 10 of those, and a full one
every 10 older ones once the objects that survived since the last full
collection are a quarter of those it kept. A broker holds a large, growing
set of live objects (about 30 per topic actor, 50-60 per client with its
session and connection), and everything it creates while clients connect
or new topics appear survives, so with the default thresholds each quarter
of growth costs a full collection of everything: in the ``routes``
benchmark (10,000 subscribers, new topic actors at every publish) the
broker spent 6.9 s of its 10.3 s of CPU in 13 full collections of ~0.5 s
each (bench/profile.py and docs/benchmarks.md, "Where the time goes").

:func:`tune`, called by ``actorbroker serve`` once the broker has started:

* moves everything that exists then (modules, classes, the supervision
  tree: never garbage) into the permanent generation, which no collection
  scans again (``gc.freeze``);
* raises the thresholds to ``THRESHOLDS``: a young collection every 50,000
  allocations, an older one every 20 of those, a full one (still subject
  to the quarter rule) every 20 older ones. Garbage cycles are found later
  (a young collection of up to 50,000 objects takes a few ms), and growth
  costs a full collection every 20 million allocations at most. The same
  run: 1.3 s of GC in 27 collections, none of them full.

Embedded brokers (``Broker`` in an application, the test fixture) leave the
collector as the application set it.
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "tune"]

#: (young, older, full): see the module doc.
THRESHOLDS = (50_000, 20, 20)


def tune(thresholds: tuple[int, int, int] = THRESHOLDS) -> None:
    """Freeze the objects that exist now and raise the collector's thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
