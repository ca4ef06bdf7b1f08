"""kill -9 with a shared subscription: every message a publisher saw acknowledged reaches the group, QoS 2 once.

Two MQTT 5 clients with persistent sessions (Session Expiry 1 h) share
``$share/g/crash/#`` (one granted QoS 2, one QoS 1). QoS 1 and QoS 2
publishers (MQTT 3.1.1, persistent) keep publishing while a real broker
process is killed with SIGKILL at random moments and restarted; between
kills both members sometimes go away together for a while, so the group's
messages wait in an offline member's queue (in its actor's memory or, once
it hibernated, in the log). At the end:

* every payload acknowledged to a publisher reached one member or the other
  (the group's debt is derived from the ``Publish`` record: the PUBACK does
  not wait for the router; ``SharedRouted`` settles it; a restart hands what
  is still owed to a member; see durable/shared.py);
* no QoS 2 payload reached the group at QoS 2 twice (each ``SharedRouted``
  settles an offset once);
* every restart succeeded and the broker logged no crash.

The moments come from a seeded generator (the seed is printed on failure).
It fails on the code before SharedRouted existed (messages queued in a
member actor's memory, or routed after the PUBACK, were lost to kill -9).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from crash_broker import BrokerProcess, free_port
from crash_clients import Publisher, Subscriber, settle, start_clients

KILLS = 6
GROUP = "$share/g/crash/#"


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_kill_9_loses_nothing_a_shared_group_was_owed(tmp_path: Path) -> None:
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    members = [Subscriber("member-q2", broker.port, GROUP, 2, level=5),
               Subscriber("member-q1", broker.port, GROUP, 1, level=5)]
    pubs = [Publisher("pub-q1", broker.port, "crash/q1", 1),
            Publisher("pub-q2", broker.port, "crash/q2", 2)]
    began = time.monotonic()
    try:
        startup = [broker.start()]
        start_clients(members, pubs, seed)
        for kill in range(KILLS):
            time.sleep(rng.uniform(0.15, 0.6))
            if kill % 2:  # both members away: the group's messages wait in a queue
                away = rng.uniform(0.2, 0.8)
                for member in members:
                    member.drop(away)
                time.sleep(rng.uniform(0.05, away))
            broker.kill()
            startup.append(broker.start())
        time.sleep(rng.uniform(0.2, 0.5))
        acknowledged = settle(pubs)
        deadline = time.monotonic() + 30
        missing = set(acknowledged)
        while missing and time.monotonic() < deadline:  # to either member: poll both
            missing = {p for p in missing if all(p not in m.received for m in members)}
            if missing:
                members[0].wait_for(missing, 0.05)
        qos2: dict[bytes, int] = {}
        for member in members:
            for payload, copies in member.qos2_copies.items():
                qos2[payload] = qos2.get(payload, 0) + copies
        twice = {p: n for p, n in qos2.items() if n > 1}
    finally:
        for client in (*pubs, *members):
            client.stopping.set()
        broker.stop()
    log = (tmp_path / "broker.log").read_text(errors="replace")
    errors = [e for c in (*pubs, *members) for e in c.errors]
    shares = {m.client_id: sum(m.received.values()) for m in members}
    summary = (f"seed {seed}: {broker.starts} starts, {len(acknowledged)} acknowledged "
               f"({sum(p.sent for p in pubs)} sent), received {shares}, connects "
               f"{[c.connects for c in (*pubs, *members)]}, start times "
               f"{[round(s, 2) for s in startup]} s, {time.monotonic() - began:.1f} s in all")
    print(summary)
    assert not errors, f"{summary}: client errors {errors}"
    assert broker.starts == KILLS + 1, summary
    assert all(p.settled for p in pubs), f"{summary}: publishers did not settle"
    assert len(acknowledged) > 50 * (KILLS + 1) // 10, f"{summary}: too little traffic"
    assert all(shares.values()), f"{summary}: the group never used one of its members"
    assert not missing, (f"{summary}: acknowledged but never delivered to the group: "
                         f"{sorted(missing)[:10]}\n{log[-4000:]}")
    assert twice == {}, f"{summary}: QoS 2 delivered to the group more than once: {twice}"
    assert "Traceback" not in log, f"{summary}: the broker logged a crash:\n{log[-4000:]}"
