"""Test support: what a running broker holds (actors, names, children) and the client processes it serves.

* :func:`census` counts, on the broker's loop: live pykka actors in the
  process, the node's names (sessions, topics), and the running children
  of the Sessions and Topics sharded supervisors.
* :func:`settled_census` waits until that census stops changing in the
  ways a test says it must (polling, like ``RunningBroker.wait_until``:
  actors stop asynchronously and offer no event to wait on).
* :func:`queued_in_session` polls until a session actor holds so many
  queued deliveries (a PUBACK says a message was handed on, not that it
  reached each subscriber's session).
* :func:`rss_bytes` is the resident set of this process (broker included).
* :func:`run_clients` runs ``load_clients.py`` in a child process and
  returns its JSON report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykka import ActorRegistry

from actorbroker.actors.names import Singleton
from actorbroker.app import RunningBroker
from supervisors import count_children, which_children

HERE = Path(__file__).parent


def census(running: RunningBroker) -> dict[str, int]:
    """Actors, names and supervised children of ``running`` right now."""
    node = running.node

    async def count() -> dict[str, int]:
        result = {"actors": len(ActorRegistry.get_all()),
                  "session_names": len(node.names.sessions),
                  "topic_names": len(node.names.topics)}
        for name, sup in (("session_children", node.names.whereis(Singleton.SESSIONS)),
                          ("topic_children", node.names.whereis(Singleton.TOPICS))):
            total = 0
            assert sup is not None
            for shard in await which_children(sup):
                if shard.ref is not None:
                    total += (await count_children(shard.ref)).active
            result[name] = total
        return result

    counted: dict[str, int] = running.run(count())
    return counted


def settled_census(running: RunningBroker, predicate: Callable[[dict[str, int]], bool],
                   timeout: float = 15.0) -> dict[str, int]:
    """Poll :func:`census` until ``predicate`` holds (TimeoutError with the last census)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while True:
        now = census(running)
        if predicate(now):
            return now
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker did not settle: {now}")
        pause.wait(0.05)


def queued_in_session(running: RunningBroker, client_id: str, count: int,
                      timeout: float = 5.0) -> None:
    """Wait until the session actor of ``client_id`` has ``count`` deliveries queued."""
    names = running.node.names

    async def queued() -> int:
        core = await names.sessions[client_id].proxy().core
        return len(core.queued)

    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while (now := running.run(queued())) != count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {client_id!r} holds {now} deliveries, not {count}")
        pause.wait(0.01)


def rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_clients(running: RunningBroker, mode: str, *args: str, timeout: float = 120.0
                ) -> dict[str, Any]:
    """Run ``load_clients.py MODE`` against ``running`` in a child process; its report."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "load_clients.py"), mode, "--host", running.host,
         "--port", str(running.port), *args],
        capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(proc.stdout)
    return report
