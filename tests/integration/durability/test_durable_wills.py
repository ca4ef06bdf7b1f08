"""Wills and the commit log inside one broker run: a session actor that crashes with its connection, a Will taken back from the log.

A crashed session actor takes its client's connection with it, and the
client sent no DISCONNECT: its Will is due ([MQTT-3.1.2-8]). The restarted
actor of a durable session finds the Will in the log (still there: no
``WillSent``, no ``WillCleared``) and it goes out once, after its Will
Delay Interval; a clean session's Will, which only the log remembers, is
published by the keeper. The kill -9 cases are in test_crash_wills.py.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from durability_kit import durable_config, raw, running

from actorbroker.actors.faults import CrashForTest
from actorbroker.actors.names import Asleep
from actorbroker.codec import Connect, Properties, PubAck, Publish, Subscribe, Subscription, Will


def wait_for(broker: Any, probe: Any, timeout: float = 5.0) -> Any:
    """Poll ``probe()`` on the broker's loop until truthy (actors restart asynchronously)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not (found := broker.call(probe)):
        assert time.monotonic() < deadline, "the broker never got there"
        pause.wait(0.01)
    return found


def crash(broker: Any, client_id: str) -> None:
    names = broker.node.names
    old = broker.call(lambda: names.sessions[client_id])
    broker.call(lambda: old.tell(CrashForTest()))
    wait_for(broker, lambda: not old.is_alive())


def test_a_crashed_session_actor_publishes_no_will_twice_and_loses_none(tmp_path: Path) -> None:
    config = durable_config(tmp_path / "data")
    with running(config, fault_injection=True) as broker:
        watch = raw(broker)
        watch.connect("watch")
        watch.send(Subscribe(1, (Subscription("will/#", 1),)))
        watch.recv()  # SUBACK
        durable = raw(broker, level=5)
        durable.send(Connect("MQTT", 5, "dur", True, 60,
                             will=Will("will/dur", b"dur", 1, False,
                                       Properties(will_delay_interval=1)),
                             properties=Properties(session_expiry_interval=3600)))
        durable.recv()  # CONNACK
        clean = raw(broker)
        clean.connect("cln", will=Will("will/cln", b"cln", 1))
        began = time.monotonic()
        crash(broker, "dur")
        crash(broker, "cln")
        got: dict[str, float] = {}
        while len(got) < 2:
            packet = watch.recv()
            assert isinstance(packet, Publish) and packet.topic not in got, packet
            got[packet.topic] = time.monotonic() - began
            watch.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
        assert set(got) == {"will/dur", "will/cln"}
        assert got["will/dur"] >= 1.0, f"after its Will Delay Interval: {got}"
        wait_for(broker, lambda: type(broker.node.names.sessions.get("dur")) is Asleep)
        marker = raw(broker)
        marker.connect("marker")
        marker.send(Publish("will/dur", b"marker", 1, False, False, 1),
                    Publish("will/cln", b"marker", 1, False, False, 2))
        assert [marker.recv(), marker.recv()] == [PubAck(1), PubAck(2)]
        after = [watch.recv(), watch.recv()]
        assert [p.payload for p in after] == [b"marker", b"marker"], "each Will once"  # type: ignore[attr-defined]
