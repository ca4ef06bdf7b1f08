"""kill -9 at random moments: nothing acknowledged is lost, no QoS 2 message arrives twice, every restart works.

A real ``actorbroker serve`` process (durability fsync, the default) on one
data directory is killed with SIGKILL at random moments, at least 10 times,
and started again each time, while two publishers (QoS 1 and QoS 2) and
two subscribers (``crash/#`` at QoS 2 and at QoS 1), all with persistent
sessions, keep working through the restarts (see crash_clients.py). At the
end the broker is started once more, the publishers stop and settle, and:

* every payload a publisher had acknowledged (PUBACK, or PUBREC at QoS 2)
  reached both subscribers;
* no QoS 2 payload reached the QoS 2 subscriber at QoS 2 twice;
* every start succeeded (the broker listened within its timeout).

The moments are drawn from a seeded random generator (the seed is printed
on failure). The test fails if the broker sends PUBACK before the record
is on disk: try it by taking the hold out of actors/durability.py.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from crash_broker import BrokerProcess, free_port
from crash_clients import Publisher, Subscriber, settle, start_clients

KILLS = 10


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_kill_9_loses_no_acknowledged_message_and_duplicates_no_qos2(tmp_path: Path) -> None:
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    subs = [Subscriber("sub-q2", broker.port, "crash/#", 2),
            Subscriber("sub-q1", broker.port, "crash/#", 1)]
    pubs = [Publisher("pub-q1", broker.port, "crash/q1", 1),
            Publisher("pub-q2", broker.port, "crash/q2", 2)]
    began = time.monotonic()
    try:
        startup = [broker.start()]
        start_clients(subs, pubs, seed)
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.15, 1.0))  # a random moment: what is under test
            broker.kill()
            startup.append(broker.start())
        time.sleep(rng.uniform(0.2, 0.5))
        acknowledged = settle(pubs)
        missing = {s.client_id: s.wait_for(acknowledged, 30) for s in subs}
        qos2 = {p: n for p, n in subs[0].qos2_copies.items() if n > 1}
    finally:
        for client in (*pubs, *subs):
            client.stopping.set()
        broker.stop()
    log = (tmp_path / "broker.log").read_text(errors="replace")
    errors = [e for c in (*pubs, *subs) for e in c.errors]
    summary = (f"seed {seed}: {broker.starts} starts, {len(acknowledged)} acknowledged "
               f"({sum(p.sent for p in pubs)} sent), connects "
               f"{[c.connects for c in (*pubs, *subs)]}, start times "
               f"{[round(s, 2) for s in startup]} s, {time.monotonic() - began:.1f} s in all")
    print(summary)
    assert not errors, f"{summary}: client errors {errors}"
    assert broker.starts == KILLS + 1, summary
    assert all(p.settled for p in pubs), f"{summary}: publishers did not settle"
    drops = [line for line in log.splitlines() if "dropped" in line]
    assert not drops, f"{summary}: the broker dropped messages: {drops[:5]}"
    assert len(acknowledged) > 100 * (KILLS + 1) // 10, f"{summary}: too little traffic"
    assert missing == {"sub-q2": set(), "sub-q1": set()}, (
        f"{summary}: acknowledged but never delivered: "
        f"{ {k: sorted(v)[:10] for k, v in missing.items()} }\n{log[-4000:]}")
    assert qos2 == {}, f"{summary}: QoS 2 delivered more than once: {dict(list(qos2.items())[:10])}"
    assert "Traceback" not in log, f"{summary}: the broker logged a crash:\n{log[-4000:]}"
