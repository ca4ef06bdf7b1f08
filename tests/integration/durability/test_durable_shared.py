"""MQTT 5 shared subscriptions of persistent sessions through restarts: rebuilt from the log, kill -9 included.

The log keeps a persistent session's ``$share/{group}/{filter}``
subscriptions as it keeps its others (``Subscribed``, restated by
checkpoints); at a restart the registry puts them back into their groups.
A message for a group whose members are all offline goes to one of them
(its queue in the log, ``SessionQueued``): each message reaches the group
once. ``replay`` starts from the log alone (no snapshot), through a
checkpoint or not; the kill -9 test restarts a real process.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from crash_broker import BrokerProcess, free_port
from durability_kit import RawClient, connect5, durable_config, raw, running, status

from actorbroker.actors.storage.requests import LoadSession
from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription, Unsubscribe
from actorbroker.durable.snapshot import SNAPSHOT_NAME

GROUP = "$share/g/s/#"


def members(broker: Any) -> dict[str, int]:
    async def read() -> dict[str, int]:
        found: dict[str, int] = await broker.node.names.registry().proxy().shared_members(GROUP)
        return found
    return dict(broker.run(read()))


def queued_for(broker: Any, client_id: str) -> int:
    load = broker.node.names.storage().ask(LoadSession(client_id), timeout=10)
    return len(load.queue)


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    """Poll ``predicate()`` (the storage actor's figures change on its own thread)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "never"
        pause.wait(0.01)


def member(client: RawClient, client_id: str, *, clean: bool = True) -> None:
    connect5(client, client_id, clean=clean, expiry=3600)
    if clean:
        client.send(Subscribe(1, (Subscription(GROUP, 1),)))
        assert isinstance(client.recv(), SubAck)


def drain(client: RawClient, count: int) -> list[bytes]:
    got = []
    for _ in range(count):
        packet = client.recv()
        assert isinstance(packet, Publish), packet
        client.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
        got.append(packet.payload)
    return got


def publish(broker_host: str, port: int, payloads: list[bytes]) -> None:
    pub = RawClient(broker_host, port, 4)
    pub.connect("pub")
    pub.send(*(Publish("s/t", p, 1, False, False, n) for n, p in enumerate(payloads, 1)))
    assert [pub.recv() for _ in payloads] == [PubAck(n) for n in range(1, len(payloads) + 1)]
    pub.disconnect()


@pytest.mark.parametrize("checkpoint", [False, True])
def test_shared_memberships_are_rebuilt_from_the_log(tmp_path: Path, checkpoint: bool) -> None:
    data = tmp_path / "data"
    config = durable_config(data, **({"checkpoint_bytes": 1} if checkpoint else {}))
    with running(config) as broker:
        for cid in ("m1", "m2"):
            client = raw(broker, level=5)
            member(client, cid)
            client.disconnect()
        assert members(broker) == {"m1": 1, "m2": 1}
        assert (status(broker)["checkpoint"] is not None) is checkpoint
    (data / SNAPSHOT_NAME).unlink()
    with running(config) as broker:
        assert members(broker) == {"m1": 1, "m2": 1}, "back in their group"
        payloads = [b"m%d" % n for n in range(6)]
        publish(broker.host, broker.port, payloads)
        # Both sleep: each message goes into one member's queue in the log (SessionQueued,
        # told by the topic actor after the publisher's PUBACK: wait until all are stored).
        wait_for(lambda: status(broker)["queued"] == 6)
        counts = {cid: queued_for(broker, cid) for cid in ("m1", "m2")}
        m1, m2 = raw(broker, level=5), raw(broker, level=5)
        member(m1, "m1", clean=False)
        member(m2, "m2", clean=False)
        got = drain(m1, counts["m1"]) + drain(m2, counts["m2"])
        assert sorted(got) == sorted(payloads), f"each message to the group once: {counts}"
        m2.send(Unsubscribe(2, (GROUP,)))
        m2.recv()  # UNSUBACK
        m1.disconnect()
        m2.disconnect()
    (data / SNAPSHOT_NAME).unlink()
    with running(config) as broker:
        assert members(broker) == {"m1": 1}, "the UNSUBSCRIBE is in the log too"


def test_a_shared_membership_survives_kill_9(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    try:
        broker.start()
        client = RawClient("127.0.0.1", broker.port, 5)
        member(client, "k")  # connected when the broker is killed
        broker.kill()
        client.close()
        broker.start()
        payloads = [b"k%d" % n for n in range(3)]
        publish("127.0.0.1", broker.port, payloads)
        client = RawClient("127.0.0.1", broker.port, 5)
        member(client, "k", clean=False)
        assert drain(client, 3) == payloads
        client.close()
    finally:
        broker.stop()
