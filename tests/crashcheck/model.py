"""Crash checker: the model of what the broker owes each session, and the checks. Stdlib only.

A message is *acknowledged* when its publisher got PUBACK (QoS 1) or PUBREC
(QoS 2). It is *owed* to a session when the session's subscription matched
for certain when it was published: the publisher first sent it after the
SUBACK of the session's current epoch (a CONNACK without Session Present
begins an epoch: a Clean Start discards what an older one was owed; one
whose CONNACK was lost is sent again, client.py, so that a client never
resumes the empty session it may have begun). QoS is
the lower of the publisher's and the highest matching grant (a QoS 2
message to a QoS 1 subscription is QoS 1 there); QoS 0 is owed nothing.

Checks, over every session at the end of a run:

* **lost**: an acknowledged message owed at QoS >= 1 never delivered
  (a shared group: to none of its members), unless the broker dropped it
  for that session because of the configured queue limit (read back from
  its commit log, drops.py); such drops must show in its log too.
* **duplicate**: a QoS 2 message delivered to the application twice in one
  session (a group: across its members); not one its publisher reissued as
  a new PUBLISH after its own session was discarded.
* **order**: per publisher, the first deliveries at QoS >= 1 of a session
  come in the order the broker received them (section 4.6,
  [MQTT-4.6.0-6]): they must be a subsequence of the publisher's PUBLISHes
  as written, resends included (``Publisher.sends``). QoS 1 is at least
  once (section 4.3.2): a message its publisher sends again after a
  reconnect is, to the broker, one more publication, after the newer ones
  it had (no state tells it apart, [MQTT-4.3.2-5]). So if the broker
  dropped the first copy (queue_full), the second may come after newer
  messages it did deliver (seed 1093449900: 114, 115, then the resent 99,
  100, 101).
* the session checks of the clients, the publishers' flows all completed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .publisher import Publisher
from .subscriber import Subscriber

DROP_LINE = re.compile(r"dropped (\d+) message\(s\) \(queue_full\)")


def matches(topic_filter: str, topic: str) -> bool:
    """MQTT topic matching (``$share/{group}/`` stripped; no ``$`` topics here)."""
    if topic_filter.startswith("$share/"):
        topic_filter = topic_filter.split("/", 2)[2]
    levels, parts = topic_filter.split("/"), topic.split("/")
    for i, level in enumerate(levels):
        if level == "#":
            return True
        if i >= len(parts) or (level != "+" and level != parts[i]):
            return False
    return len(levels) == len(parts)


def grant(sub: Subscriber, topic: str) -> int:
    """Highest QoS granted to ``sub``'s current epoch by a filter matching ``topic``."""
    granted = sub.granted.get(sub.epoch, ())
    return max((g for (f, _), g in zip(sub.spec.filters, granted)
                if g < 0x80 and matches(f, topic)), default=0)


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    lost: dict[str, list[bytes]] = field(default_factory=dict)  # session -> payloads
    figures: dict[str, int] = field(default_factory=dict)


def owed(pubs: list[Publisher], members: list[Subscriber]) -> set[bytes]:
    """The acknowledged payloads owed to a session (one member: a plain session; several:
    a shared group, owed from the first SUBACK of a member)."""
    since = [m.subscribed_at[m.epoch] for m in members if m.epoch in m.subscribed_at]
    if not since:
        return set()
    start = min(since)
    result: set[bytes] = set()
    for pub in pubs:
        qos = min(pub.spec.qos, max(grant(m, pub.spec.topic) for m in members))
        if qos == 0:
            continue
        result.update(m.payload for m in pub.messages
                      if m.acked is not None and m.first_sent > start)
    return result


def sessions(subs: list[Subscriber]) -> dict[str, list[Subscriber]]:
    """Plain subscribers by client id, shared group members by group."""
    found: dict[str, list[Subscriber]] = defaultdict(list)
    for sub in subs:
        found[f"$share/{sub.spec.group}" if sub.spec.group else sub.spec.cid].append(sub)
    return found


def missing(pubs: list[Publisher], subs: list[Subscriber]) -> dict[str, set[bytes]]:
    """Owed and not delivered, per session (what the final phase waits for)."""
    result = {}
    for name, members in sessions(subs).items():
        got = {d.payload for m in members for d in m.deliveries if d.epoch == m.epoch}
        result[name] = owed(pubs, members) - got
    return result


def check(pubs: list[Publisher], subs: list[Subscriber], broker_log: str,
          dropped: dict[str, set[bytes]]) -> Verdict:
    """``dropped``: client id -> payloads the broker dropped for it (a queue limit)."""
    verdict = Verdict()
    v = verdict.violations
    for client in (*pubs, *subs):
        v.extend(client.violations)
        v.extend(f"checker error: {e}" for e in client.errors)
    for pub in pubs:
        if not pub.settled:
            v.append(f"{pub.name}: {pub.open_flows} flow(s) still open at the end (the "
                     "broker never completed them)")
    lost: dict[str, list[bytes]] = {}
    excused = 0
    for name, gone in missing(pubs, subs).items():
        allowed = set().union(*(dropped.get(m.spec.cid, set()) for m in sessions(subs)[name]))
        excused += len(gone & allowed)
        if gone - allowed:
            lost[name] = sorted(gone - allowed, key=_order)
    logged = sum(int(n) for n in DROP_LINE.findall(broker_log))
    verdict.figures = {"acknowledged": sum(m.acked is not None for p in pubs for m in p.messages),
                       "delivered": sum(len(s.deliveries) for s in subs),
                       "lost": sum(map(len, lost.values())), "dropped_queue_full": excused,
                       "queue_full_logged": logged}
    verdict.lost = lost
    for name, payloads in lost.items():
        v.append(f"{name}: {len(payloads)} acknowledged message(s) lost, e.g. "
                 f"{[p[:24] for p in payloads[:5]]}")
    if excused and not logged:
        v.append(f"{excused} message(s) dropped (queue_full), not one logged")
    reissued = {m.payload for p in pubs for m in p.messages if m.reissued}
    for name, members in sessions(subs).items():
        # A plain session: per epoch; a group: across its members (which never clean start).
        copies = Counter((d.epoch if len(members) == 1 else 0, d.payload)
                         for m in members for d in m.deliveries if d.qos == 2)
        twice = [p for (_, p), n in copies.items() if n > 1 and p not in reissued]
        if twice:
            v.append(f"{name}: {len(twice)} QoS 2 message(s) delivered twice, e.g. "
                     f"{[p[:24] for p in twice[:3]]}")
        if len(members) == 1:
            v.extend(_order_violations(name, members[0], pubs))
    return verdict


def _order(payload: bytes) -> tuple[str, int]:
    cid, seq, _ = payload.split(b"|", 2)
    return cid.decode(), int(seq) if seq.isdigit() else -1


def _order_violations(name: str, sub: Subscriber, pubs: list[Publisher]) -> list[str]:
    clean = {p.spec.cid for p in pubs if not p.refused}  # a refused one is resent later
    # Where each message stands in its publisher's sends: a first delivery must match a send
    # after the one the previous first delivery matched (the earliest such: greedy is exact
    # for a subsequence).
    places = {p.spec.cid: _places(p.sends) for p in pubs}
    at: dict[tuple[int, str], tuple[int, int]] = {}  # (epoch, cid) -> (send index, seq)
    seen: set[tuple[int, bytes]] = set()
    found = []
    for d in sub.deliveries:
        if d.qos == 0 or (d.epoch, d.payload) in seen or d.payload.startswith(b"will|"):
            continue
        seen.add((d.epoch, d.payload))
        cid, seq = _order(d.payload)
        if cid not in clean:
            continue
        index, before = at.get((d.epoch, cid), (-1, -1))
        sent = places[cid].get(seq, [])
        later = bisect_right(sent, index)
        if later == len(sent):
            found.append(f"{name}: {cid}'s message {seq} delivered after {before} (order)")
            continue
        at[(d.epoch, cid)] = (sent[later], seq)
    return found[:3]


def _places(sends: list[int]) -> dict[int, list[int]]:
    """seq -> the indexes of its sends, ascending."""
    found: dict[int, list[int]] = defaultdict(list)
    for index, seq in enumerate(sends):
        found[seq].append(index)
    return found
