"""Crash checker: the scenario of one seed, drawn at random. Stdlib only.

Everything a run does that is not timing comes from here: the broker's
storage settings, the clients and their behaviours, and the crash plan. A
seed always draws the same scenario, so ``--seed N`` replays it (the
instants at which packets cross still differ from run to run). Each client
also gets its own generator (:func:`client_rng`) for the choices it makes
per connection (how long it stays, how it leaves, whether it comes back
with Clean Start), so those follow the seed too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOPICS = ("t/a", "t/b", "t/c/x")
# Plain filters that overlap on the topics above (a session with two of them
# gets one copy of a message, at the highest granted QoS [MQTT-3.3.5-1]).
FILTERS = ("t/#", "t/a", "t/+", "t/c/#", "t/+/x", "t/b")
ACKS = ("immediate", "paced", "delayed", "withheld", "out_of_order")
ENDS = ("disconnect", "half_close", "rst", "silence")
SIGNALS = ("KILL", "TERM")


@dataclass(frozen=True)
class BrokerSpec:
    """[storage] and [limits] options: small segments and checkpoints, so that crashes land
    during segment rolls, checkpoints, snapshot writes and retention."""

    segment_bytes: int
    checkpoint_bytes: int
    checkpoint_interval: float
    retention_bytes: int  # 0: off (needed to read every SessionDropped back)
    max_queued_messages: int  # 0: unlimited; else drops are allowed and must be counted
    group_commit_ms: float

    def toml(self) -> str:
        return (f"[storage]\nsegment_bytes = {self.segment_bytes}\n"
                f"checkpoint_bytes = {self.checkpoint_bytes}\n"
                f"checkpoint_interval = {self.checkpoint_interval}\n"
                f"retention_bytes = {self.retention_bytes}\nretention_hours = 0\n"
                f"group_commit_interval = {self.group_commit_ms}\n\n"
                f"[limits]\nmax_queued_messages = {self.max_queued_messages}\n\n"
                "[sys]\ninterval = 0\n")


@dataclass(frozen=True)
class ClientSpec:
    """What every client shares: identity, protocol, session and connection habits."""

    cid: str
    level: int  # 4 (MQTT 3.1.1) or 5
    expiry: int  # v5 Session Expiry Interval (> 0: every client here keeps its session)
    keepalive: int  # seconds; small for clients that go silent, so the broker notices
    will_qos: int  # 0: no Will
    ends: tuple[str, ...]  # how its connections end, drawn per connection
    spell: tuple[float, float]  # seconds connected before it leaves on its own
    offline: tuple[float, float]  # seconds away before it comes back
    clean_p: float  # chance that a comeback uses Clean Start (a new session)


@dataclass(frozen=True)
class PublisherSpec(ClientSpec):
    topic: str = "t/a"
    qos: int = 1
    rate: float = 100.0  # messages per second
    window: int = 10  # unacknowledged PUBLISHes at once
    count: int = 300
    payload_bytes: int = 64


@dataclass(frozen=True)
class SubscriberSpec(ClientSpec):
    filters: tuple[tuple[str, int], ...] = ()  # (filter, QoS); one "$share/..." for a member
    ack: str = "immediate"
    ack_rate: float = 0.0  # paced: acks per second
    ack_delay: float = 0.0  # delayed: seconds
    flush_acks_at_end: bool = False  # the acks it owes go out with its DISCONNECT
    receive_maximum: int | None = None  # v5

    @property
    def group(self) -> str | None:
        first = self.filters[0][0]
        return first.split("/")[1] if first.startswith("$share/") else None


@dataclass(frozen=True)
class CrashSpec:
    """One stop of the broker. ``trigger``: "time" (``delay`` s after it listened),
    "startup" (``delay`` s after the process began: recovery, the snapshot load),
    "checkpoint" (``delay`` s after it logged a checkpoint: the snapshot write that
    follows), "retention" (after it logged deleting segments), "offline" (``delay`` s after ``target`` ended a connection on its own)."""

    trigger: str
    delay: float
    signal: str
    target: str = ""


@dataclass(frozen=True)
class Scenario:
    seed: int
    broker: BrokerSpec
    publishers: tuple[PublisherSpec, ...]
    subscribers: tuple[SubscriberSpec, ...]
    crashes: tuple[CrashSpec, ...]
    duration: float  # seconds of traffic at least, from the publishers' start


    def describe(self) -> str:
        """One line per part, for the report of a run."""
        b = self.broker
        lines = [f"broker: segments {b.segment_bytes >> 10} KiB, checkpoints "
                 f"{b.checkpoint_bytes >> 10} KiB / {b.checkpoint_interval} s, retention "
                 f"{b.retention_bytes >> 10} KiB, queue limit {b.max_queued_messages or 'none'}"]
        for p in self.publishers:
            lines.append(f"{p.cid}: v{p.level} QoS {p.qos} -> {p.topic}, {p.count} at "
                         f"{p.rate:.0f}/s, window {p.window}, {p.payload_bytes} B, "
                         f"will QoS {p.will_qos}, ends {'/'.join(p.ends)}, clean {p.clean_p}")
        for s in self.subscribers:
            acks = {"paced": f" {s.ack_rate:.0f}/s", "delayed": f" {s.ack_delay * 1e3:.0f} ms"}
            lines.append(f"{s.cid}: v{s.level} {list(s.filters)}, acks {s.ack}"
                         f"{acks.get(s.ack, '')}{' flushed at DISCONNECT' if s.flush_acks_at_end else ''}"
                         f", ends {'/'.join(s.ends)}, clean {s.clean_p}, receive max "
                         f"{s.receive_maximum}, will QoS {s.will_qos}")
        lines.append(f"traffic for {self.duration:.1f} s at least; crashes: " + ", ".join(
            f"{c.signal} {c.trigger}{'(' + c.target + ')' if c.target else ''}+{c.delay:.2f}s"
            for c in self.crashes))
        return "\n".join(lines)


def client_rng(seed: int, cid: str) -> random.Random:
    """The generator of a client's own choices (string seeds hash the same in every run)."""
    return random.Random(f"{seed}/{cid}")


def draw(seed: int) -> Scenario:
    """The scenario of ``seed``."""
    rng = random.Random(seed)
    queue_limit = rng.choice((0, 0, 0, rng.randrange(30, 200)))
    broker = BrokerSpec(
        segment_bytes=1 << 20,  # the smallest allowed: rolls every few hundred messages
        checkpoint_bytes=rng.choice((32, 64, 128, 256)) << 10,
        checkpoint_interval=rng.choice((0.3, 0.7, 2.0)),
        # Retention deletes what the log no longer needs; off when drops must be read back.
        retention_bytes=0 if queue_limit else rng.choice((0, 2 << 20, 3 << 20)),
        max_queued_messages=queue_limit,
        group_commit_ms=rng.choice((0.0, 2.0, 5.0)))
    publishers = tuple(_publisher(rng, i) for i in range(rng.choice((1, 1, 2, 2, 3))))
    subscribers = [_subscriber(rng, f"sub{i}") for i in range(rng.randint(1, 2))]
    if rng.random() < 0.4:
        subscribers.append(_backlog(rng))
    if rng.random() < 0.4:
        group = f"$share/g/{rng.choice(('t/#', 't/+'))}"
        subscribers += [_subscriber(rng, f"member{i}", group=group) for i in range(2)]
    if any(p.will_qos for p in publishers) or any(s.will_qos for s in subscribers):
        subscribers.append(_watcher(rng))
    crashes = tuple(_crash(rng, subscribers) for _ in range(rng.randint(1, 3)))
    return Scenario(seed, broker, publishers, tuple(subscribers), crashes,
                    duration=rng.uniform(1.5, 3.0))


def _habits(rng: random.Random, cid: str, level: int) -> dict[str, object]:
    ends = tuple(rng.sample(ENDS, rng.randint(1, 3)))
    return dict(cid=cid, level=level, expiry=rng.choice((300, 3600, 0xFFFFFFFF)),
                keepalive=1 if "silence" in ends else rng.choice((0, 30)),
                will_qos=rng.choice((0, 0, 1, 2)), ends=ends,
                spell=rng.choice(((0.3, 1.0), (0.8, 2.5), (5.0, 9.0))),
                offline=rng.choice(((0.02, 0.2), (0.1, 1.0))),
                clean_p=rng.choice((0.0, 0.0, 0.3)))


def _publisher(rng: random.Random, i: int) -> PublisherSpec:
    level = rng.choice((4, 5))
    return PublisherSpec(**_habits(rng, f"pub{i}", level),  # type: ignore[arg-type]
                         topic=rng.choice(TOPICS), qos=rng.choice((1, 2)),
                         rate=rng.choice((60.0, 120.0, 250.0)), window=rng.choice((1, 5, 20)),
                         count=rng.randrange(100, 300),
                         payload_bytes=rng.choice((16, 200, 1500)))


def _subscriber(rng: random.Random, cid: str, group: str | None = None) -> SubscriberSpec:
    level = 5 if group else rng.choice((4, 5))
    acks = ACKS if level == 5 else ACKS[:4]  # MQTT 3.1.1 acks in order [MQTT-4.6.0-2]
    ack = rng.choice(acks)
    if group:
        filters: tuple[tuple[str, int], ...] = ((group, rng.choice((1, 2))),)
    else:
        picked = rng.sample(FILTERS, rng.randint(1, 2))
        filters = tuple((f, rng.choice((0, 1, 1, 2, 2))) for f in picked)
        if all(q == 0 for _, q in filters):
            filters = ((filters[0][0], 1),) + filters[1:]
    habits = _habits(rng, cid, level)
    if group:  # a member keeps its session: a clean start would end what it holds
        habits["clean_p"] = 0.0
    return SubscriberSpec(**habits,  # type: ignore[arg-type]
                          filters=filters, ack=ack, ack_rate=rng.choice((20.0, 50.0, 150.0)),
                          ack_delay=rng.choice((0.02, 0.1, 0.4)),
                          flush_acks_at_end=rng.random() < 0.5,
                          receive_maximum=rng.choice((None, 1, 3, 10)) if level == 5 else None)


def _backlog(rng: random.Random) -> SubscriberSpec:
    """A persistent MQTT 3.1.1 subscriber that acks slower than messages come, so a queue
    builds behind its full window, then leaves sending the acks it owes, DISCONNECT and a
    half-close in one go; the crash plan stops the broker while it is away."""
    return SubscriberSpec(cid="backlog", level=4, expiry=0xFFFFFFFF, keepalive=0, will_qos=0,
                          ends=("half_close",), spell=(1.0, 2.0), offline=(0.8, 1.5),
                          clean_p=0.0, filters=(("t/#", 1),), ack="paced",
                          ack_rate=rng.choice((10.0, 25.0)), flush_acks_at_end=True)


def _watcher(rng: random.Random) -> SubscriberSpec:
    """Subscribes to the Wills, persistent, acks at once, leaves now and then."""
    return SubscriberSpec(cid="wills", level=rng.choice((4, 5)), expiry=3600, keepalive=0,
                          will_qos=0, ends=("disconnect",), spell=(1.0, 3.0),
                          offline=(0.05, 0.3), clean_p=0.0, filters=(("will/#", 2),))


def _crash(rng: random.Random, subscribers: list[SubscriberSpec]) -> CrashSpec:
    signal = rng.choice(SIGNALS)
    roll = rng.random()
    if roll < 0.15:
        return CrashSpec("startup", rng.uniform(0.0, 0.5), "KILL")
    if roll < 0.3:
        return CrashSpec("checkpoint", rng.uniform(0.0, 0.05), signal)
    if roll < 0.4:
        return CrashSpec("retention", rng.uniform(0.0, 0.02), signal)
    if roll < 0.6 and subscribers:
        target = next((s.cid for s in subscribers if s.cid == "backlog"),
                      rng.choice(subscribers).cid)
        # Soon after it left, or once its session hibernated (the broker needs some time).
        return CrashSpec("offline", rng.uniform(0.0, 0.6), signal, target)
    return CrashSpec("time", rng.uniform(0.15, 1.5), signal)
