"""Running out of file descriptors never kills a listener (a subprocess with RLIMIT_NOFILE 64).

The broker runs in its own process (emfile_broker.py) with a low soft
limit. The test opens MQTT connections until the broker cannot accept
another one (EMFILE), checks that the one it could not take waits in the
backlog instead of being dropped, closes a few connections and sees the
waiting client served and new clients accepted again.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from transport_testkit import RawClient

from actorbroker.codec import ConnAck, Connect, Publish

NOFILE = 64
SCRIPT = Path(__file__).with_name("emfile_broker.py")


@pytest.fixture
def broker_process():
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(NOFILE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield proc, port
    finally:
        proc.kill()
        proc.wait(10)


async def _stats(client: RawClient) -> dict[str, int]:
    await client.send(Publish("stats", b""))
    while True:
        packet = await client.recv()
        if isinstance(packet, Publish) and packet.topic == "stats" and packet.payload:
            return json.loads(packet.payload)


def test_listener_recovers_from_emfile(run, broker_process) -> None:
    proc, port = broker_process

    async def scenario() -> None:
        clients: list[RawClient] = []
        waiting = None
        for i in range(NOFILE + 10):
            client = await RawClient.open(port, level=4)
            await client.send(Connect("MQTT", 4, f"c{i}", True, 0))
            try:
                assert await client.recv(timeout=0.5) == ConnAck(False, 0)
            except asyncio.TimeoutError:
                waiting = client  # not accepted: the broker is out of descriptors
                break
            clients.append(client)
        assert waiting is not None, "never ran out of file descriptors"
        assert 20 < len(clients) < NOFILE
        assert proc.poll() is None
        for client in clients[:5]:
            client.close()
        # The client that waited in the backlog is accepted once descriptors free up.
        assert await waiting.recv(timeout=10) == ConnAck(False, 0)
        fresh = await RawClient.open(port, level=4)
        assert await fresh.connect("fresh") == ConnAck(False, 0)
        await fresh.ping()
        stats = await _stats(fresh)
        assert stats["accept_errors"] >= 1
        assert stats["connections_accepted"] == len(clients) + 2
        for client in (*clients[5:], waiting, fresh):
            client.close()

    run(scenario(), timeout=60)
    assert proc.poll() is None, "the broker died"
    proc.kill()
    _, err = proc.communicate(timeout=10)
    assert "accept() failed: [Errno 24] Too many open files" in err
    assert "accepting again after" in err
