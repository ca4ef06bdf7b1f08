"""Stress: 2,000 clients connect, subscribe with wildcards, publish QoS 1 and disconnect, all at once.

The clients run in a child process on their own uvloop (``load_clients.py
stress``), so that they neither share the broker's loop nor its GIL. Each
client subscribes to ``stress/<group>/+`` and ``stress/+/<itself>`` (its
own messages match both filters: one copy), publishes two QoS 1 messages,
and must receive exactly its group's twenty messages, no more, no fewer, no
duplicate. Afterwards the broker must hold nothing of them: no session, no
subscription, and, once idle topic actors have stopped, exactly the actors
it had before the clients came (clean sessions leave nothing behind).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from actorbroker.app import RunningBroker

sys.path.insert(0, str(Path(__file__).parent))

from census import census, run_clients, settled_census  # noqa: E402
from load_clients import raise_nofile  # noqa: E402

CLIENTS = 2000
GROUP = 10
MESSAGES = 2


def test_2000_clients_lose_no_qos1_message_and_leave_no_actor_behind(
        start_broker: Callable[..., RunningBroker]) -> None:
    raise_nofile(CLIENTS + 1024)  # the broker's side of every connection is in this process
    running = start_broker(sys_interval=0, topic_idle=0.5)
    before = census(running)

    report = run_clients(running, "stress", "--clients", str(CLIENTS), "--group", str(GROUP),
                         "--messages", str(MESSAGES))

    assert report["missing"] == 0 and not report["errors"], report
    assert report["deliveries"] == CLIENTS * GROUP * MESSAGES, report
    # Sessions retire and the registry drops their subscriptions asynchronously.
    metrics = running.wait_until(lambda m: m["clients_connected"] == 0 and m["sessions"] == 0
                                 and m["subscriptions"] == 0, timeout=20)
    assert metrics["connects"] == CLIENTS and metrics["disconnects"] == CLIENTS
    assert metrics["publish_received"] == CLIENTS * MESSAGES
    assert metrics["dropped_total"] == 0, metrics["dropped"]
    assert metrics["protocol_errors"] == 0 and metrics["output_overflows"] == 0
    # Topic actors stop after topic_idle without subscribers; then only the fixed tree is left.
    after = settled_census(running, lambda c: c["actors"] == before["actors"], timeout=20)
    assert after == before, (before, after)
