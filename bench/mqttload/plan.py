"""Load generator: what each worker process does. Stdlib only.

A :class:`LoadPlan` is built by ``bench.scenarios`` in the driver; it holds
one :class:`WorkerPlan` per process (pickled to the process at spawn) and
what the driver needs to check the deliveries afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["LoadPlan", "PubSpec", "SubSpec", "WorkerPlan"]

#: sent[pub_id] -> {sub_index: {pub_id: deliveries expected}}
ExpectedFn = Callable[[Sequence[int]], Mapping[int, Mapping[int, int]]]


@dataclass(frozen=True, slots=True)
class PubSpec:
    """One publishing connection.

    ``cycle`` lists indices into ``topics`` (message ``seq`` goes to
    ``topics[cycle[seq % len(cycle)]]``); empty means ``topics[0]`` only.
    ``fan`` is the number of deliveries each topic produces (indexed like
    ``topics``), for the end-to-end credit. ``rate`` paces the publisher
    (messages/s; 0: as fast as the window, the credit and TCP allow).
    """

    pub_id: int
    client_id: str
    topics: tuple[str, ...]
    qos: int
    payload: int
    count: int
    fan: tuple[int, ...]
    cycle: tuple[int, ...] = ()
    window: int = 100
    rate: float = 0.0


@dataclass(frozen=True, slots=True)
class SubSpec:
    """One subscribing connection; ``index`` is global over the plan."""

    index: int
    client_id: str
    filters: tuple[str, ...]
    qos: int


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """Everything one worker process needs (pickled to it).

    ``role`` is "pub", "sub" or "idle". ``proc`` numbers the process within
    its role (subscriber processes own slots ``proc * publishers ..`` of the
    shared progress array). Times are in seconds.
    """

    role: str
    proc: int
    host: str
    port: int
    publishers: int
    sub_procs: int
    pubs: tuple[PubSpec, ...] = ()
    subs: tuple[SubSpec, ...] = ()
    idle: int = 0
    idle_prefix: str = "idle"
    dense: bool = True
    duration: float = 3.0
    setup_timeout: float = 30.0
    drain_timeout: float = 2.0
    batch: int = 128
    credit: int = 16_000   # deliveries this publisher may have in flight (0: no credit)
    latency_skip: int = 0
    concurrency: int = 100


@dataclass(slots=True)
class LoadPlan:
    """A scenario ready to run: worker plans plus the delivery check.

    ``kind`` is "flow" (publishers and subscribers) or "conns" (idle
    connections). ``expected`` maps what each publisher sent to the
    deliveries each subscriber must have received.
    """

    name: str
    kind: str
    workers: list[WorkerPlan]
    expected: ExpectedFn | None = None
    qos: int = 0
    publishers: int = 0
    info: dict[str, object] = field(default_factory=dict)
    #: deliveries per publisher id known in advance (self-test: the peer is the publisher)
    preset_expected: list[int] | None = None

    @property
    def sub_procs(self) -> int:
        return sum(1 for w in self.workers if w.role == "sub")
