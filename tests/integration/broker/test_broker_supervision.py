"""Supervision through real sockets: crashed session and topic actors come back; nothing leaks.

Crashes are caused with the test-only fault hook (``actorbroker.actors.faults``:
an actor told ``CrashForTest`` raises from its handler, as a bug would; only
a node started with ``fault_injection=True`` honours it).

* A crashed session actor is restarted by its shard supervisor; its client
  loses the connection, reconnects with Clean Session 0 and finds its
  session (Session Present) and its subscriptions. What the actor held in
  memory (the offline queue) is lost with ``durability = "memory"`` and
  counted; with the commit log it comes back.
* A crashed clean session is not resumed: nothing of it survives.
* A crashed topic actor is forgotten by the registry; the next publish
  starts a new one with the current subscribers and the retained message.
* 10,000 connect/disconnect cycles (pipelined, from a child process) leave
  no session, no name, no supervised child, no actor behind, and the
  resident memory roughly where it was.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mqtt_testkit import Client, RawClient, broker_config

from actorbroker.actors.faults import CrashForTest
from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, PubAck, Publish, SubAck, Subscribe, Subscription

sys.path.insert(0, str(Path(__file__).parent))

from census import census, queued_in_session, rss_bytes, run_clients, settled_census  # noqa: E402
from load_clients import raise_nofile  # noqa: E402

Start = Callable[..., RunningBroker]


def _eventually(running: RunningBroker, probe: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll ``probe()`` on the broker's loop until it is truthy (actors restart asynchronously)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not (result := running.call(probe)):
        if time.monotonic() > deadline:
            raise TimeoutError("the broker never reached the expected state")
        pause.wait(0.01)
    return result


def _crash_session(running: RunningBroker, client_id: str) -> Any:
    """Crash the session actor of ``client_id``; return its (dead) ref."""
    names = running.node.names
    old = running.call(lambda: names.sessions[client_id])
    running.call(lambda: old.tell(CrashForTest()))
    _eventually(running, lambda: not old.is_alive())
    return old


def _broker(start_broker: Start, tmp_path: Path, durability: str = "memory") -> RunningBroker:
    config = broker_config(tmp_path)
    config = dataclasses.replace(config, storage=dataclasses.replace(config.storage,
                                                                     durability=durability))
    # topic_hot_window 0: every topic gets its actor at once (these tests crash them).
    return start_broker(config, fault_injection=True, sys_interval=0, topic_hot_window=0)


def test_a_crashed_session_restarts_and_its_client_resumes_with_its_subscriptions(
        start_broker: Start, tmp_path: Path) -> None:
    running = _broker(start_broker, tmp_path, "memory")  # with the log it would hibernate
    host, port = running.host, running.port
    victim = Client(host, port, "victim", clean=False)
    pub = Client(host, port, "victim-pub")
    back = Client(host, port, "victim", clean=False)
    try:
        assert victim.connect().rc == 0 and pub.connect().rc == 0
        victim.subscribe("sup/#", 1)
        victim.disconnect()
        for i in range(3):
            pub.publish("sup/queued", str(i).encode(), qos=1)  # queued in the session actor
        queued_in_session(running, "victim", 3)
        old = _crash_session(running, "victim")
        names = running.node.names
        new = _eventually(running, lambda: names.sessions.get("victim"))
        assert new is not old  # restarted under the same name by its supervisor
        result = back.connect()
        assert (result.rc, result.session_present) == (0, True)  # [MQTT-3.2.2-2]
        # The queue lived in the crashed actor only: lost, and counted as such.
        assert running.metrics()["dropped"] == {"session_crashed": 3}
        pub.publish("sup/live", b"after the crash", qos=1)  # the subscription survived
        message = back.expect()
        assert (message.topic, message.payload) == ("sup/live", b"after the crash")
        assert back.messages.qsize() == 0
    finally:
        for c in (victim, pub, back):
            c.close()


@pytest.mark.parametrize("durability", ["memory", "fsync"])
def test_a_connected_clients_session_crash_closes_its_connection_and_it_can_resume(
        start_broker: Start, tmp_path: Path, durability: str) -> None:
    running = _broker(start_broker, tmp_path, durability)
    host, port = running.host, running.port
    victim = RawClient(host, port)
    pub = Client(host, port, "online-pub")
    back = RawClient(host, port)
    try:
        assert victim.connect("online", clean=False) == ConnAck(False, 0)
        victim.send(Subscribe(1, (Subscription("on/+", 1),)))
        assert isinstance(victim.recv(), SubAck)
        assert pub.connect().rc == 0
        pub.publish("on/x", b"unacked", qos=1)
        first = victim.recv()
        assert isinstance(first, Publish) and first.payload == b"unacked"  # and no PUBACK
        _crash_session(running, "online")
        victim.expect_closed()  # the crashed actor's connection is closed
        running.wait_until(lambda m: m["clients_connected"] == 1)
        assert back.connect("online", clean=False) == ConnAck(True, 0)
        if durability == "fsync":  # the restarted actor reloaded the flow from the log
            again = back.recv()
            assert isinstance(again, Publish)
            assert (again.payload, again.packet_id, again.dup) == (b"unacked", first.packet_id,
                                                                  True)  # [MQTT-4.4.0-1]
            back.send(PubAck(again.packet_id))  # type: ignore[arg-type]
        else:  # it lived in the crashed actor only: lost, and counted
            assert running.metrics()["dropped"] == {"session_crashed": 1}
        pub.publish("on/y", b"resumed", qos=1)
        message = back.recv()
        assert isinstance(message, Publish) and message.payload == b"resumed"
    finally:
        for c in (victim, pub, back):
            c.close()


def test_a_crashed_clean_session_is_not_resumed(start_broker: Start, tmp_path: Path) -> None:
    running = _broker(start_broker, tmp_path)
    host, port = running.host, running.port
    victim = Client(host, port, "clean-victim", clean=True)
    again = Client(host, port, "clean-victim", clean=False)
    try:
        assert victim.connect().rc == 0
        victim.subscribe("gone/#", 1)
        _crash_session(running, "clean-victim")
        assert victim.disconnected.wait(5)
        # The restarted actor finds nothing to resume and retires; the registry forgets it.
        running.wait_until(lambda m: m["sessions"] == 0 and m["subscriptions"] == 0)
        assert again.connect().session_present is False
    finally:
        victim.close()
        again.close()


def test_a_crashed_topic_actor_is_recreated_and_the_retained_message_survives(
        start_broker: Start, tmp_path: Path) -> None:
    running = _broker(start_broker, tmp_path)
    host, port = running.host, running.port
    sub = Client(host, port, "topic-sub")
    pub = Client(host, port, "topic-pub")
    late = Client(host, port, "topic-late")
    names = running.node.names
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("t/r", 1)
        pub.publish("t/r", b"kept", qos=1, retain=True)
        assert sub.expect().payload == b"kept"
        old = running.call(lambda: names.topics["t/r"])
        running.call(lambda: old.tell(CrashForTest()))
        _eventually(running, lambda: "t/r" not in names.topics)  # the registry saw it die
        pub.publish("t/r", b"live", qos=1)  # starts a new topic actor, subscribers included
        message = sub.expect()
        assert (message.payload, message.retain) == (b"live", False)
        new = running.call(lambda: names.topics["t/r"])
        assert new is not old
        async def read_retained() -> Any:
            return await running.node.names.registry().proxy().retained_message("t/r")
        retained = running.run(read_retained())  # the registry's, untouched by the crash
        assert retained is not None and retained.payload == b"kept"
        assert late.connect().rc == 0
        late.subscribe("t/#", 1)
        message = late.expect()
        assert (message.topic, message.payload, message.retain) == ("t/r", b"kept", True)
    finally:
        for c in (sub, pub, late):
            c.close()


def test_the_fault_hook_is_off_by_default(start_broker: Start) -> None:
    running = start_broker(sys_interval=0)
    host, port = running.host, running.port
    client = Client(host, port, "sturdy")
    try:
        assert client.connect().rc == 0
        client.subscribe("s/t", 0)
        ref = running.call(lambda: running.node.names.sessions["sturdy"])
        running.call(lambda: ref.tell(CrashForTest()))
        client.publish("s/t", b"still here")  # handled after the ignored CrashForTest
        assert client.expect().payload == b"still here"
        assert running.call(ref.is_alive) and not client.disconnected.is_set()
    finally:
        client.close()


CYCLES = 10_000
WARMUP = 2_000
#: Allowed growth of this process's resident memory over 10k cycles, after a
#: warm-up of 2k: Python's allocator keeps freed arenas and the log's buffers
#: grow in steps, so a little; one leaked session per cycle (~20 KiB with its
#: core and ports) would be ~200 MiB.
RSS_TOLERANCE = 24 * 1024 * 1024


def test_no_actor_leaks_after_10k_connect_disconnect_cycles(start_broker: Start) -> None:
    raise_nofile(4096)
    running = start_broker(sys_interval=0)
    before = census(running)
    report = run_clients(running, "cycles", "--cycles", str(WARMUP), "--concurrency", "64")
    assert report["refused"] == 0, report
    running.wait_until(lambda m: m["sessions"] == 0 and m["clients_connected"] == 0)
    gc.collect()
    rss_before = rss_bytes()

    report = run_clients(running, "cycles", "--cycles", str(CYCLES), "--concurrency", "64")

    assert report["refused"] == 0, report
    metrics = running.wait_until(lambda m: m["sessions"] == 0 and m["clients_connected"] == 0,
                                 timeout=20)
    assert metrics["connections_accepted"] == WARMUP + CYCLES
    assert metrics["connects"] == metrics["disconnects"] >= (WARMUP + CYCLES) * 3 // 4
    assert metrics["connections_current"] == 0 and metrics["protocol_errors"] == 0
    after = settled_census(running, lambda c: c == before)
    assert after == before
    gc.collect()
    grown = rss_bytes() - rss_before
    assert grown < RSS_TOLERANCE, f"RSS grew by {grown / 2**20:.1f} MiB over {CYCLES} cycles"
