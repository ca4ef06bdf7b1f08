"""The crash checker's clients after a Clean Start whose CONNACK was lost (seed 2066932213).

With power loss, seed 2066932213 failed once on a loaded machine: the broker
stored sub1's Clean Start CONNECT (the old session's 110 queued messages
dropped, ``session_ended``) and was stopped before the CONNACK went out; sub1
came back with Clean Start 0, got Session Present 1 (the new session, empty)
and, believing its old subscriptions alive, was owed 120 messages that no
subscription matched. The broker was right ([MQTT-3.1.2-4]); the client
must not take up a session it holds no state for ([MQTT-3.2.2-4]): it sends
the Clean Start again (client.py). Here a proxy lets the CONNECT through to
a real broker and cuts the connection when the CONNACK comes back.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from actorbroker.codec import (ConnAck, Connect, PubAck, Publish, SubAck, Subscribe,
                               Subscription)
from tests.crashcheck.broker import Broker
from tests.crashcheck.client import Connection
from tests.crashcheck.scenario import BrokerSpec, SubscriberSpec
from tests.crashcheck.subscriber import Subscriber

CONFIG = BrokerSpec(segment_bytes=1 << 20, checkpoint_bytes=1 << 18, checkpoint_interval=5.0,
                    retention_bytes=0, max_queued_messages=0, group_commit_ms=1.0).toml()
SPEC = SubscriberSpec(cid="sub1", level=5, expiry=3600, keepalive=0, will_qos=0,
                      ends=("disconnect",), spell=(1.0, 1.0), offline=(0.1, 0.1), clean_p=0.0,
                      filters=(("t/#", 1),))
WAIT = 10.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    broker = Broker(tmp_path, CONFIG, power_loss=False)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop("TERM")


@contextmanager
def connack_cut(upstream: int) -> Iterator[int]:
    """A port that forwards one connection to ``upstream`` and resets it, client side
    first, as soon as the broker answers: the broker's first bytes (its CONNACK) are
    never passed on. Checks afterwards that they were a CONNACK."""
    answer: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(WAIT)

        def serve() -> None:
            client, _ = server.accept()
            with client, socket.create_connection(("127.0.0.1", upstream), WAIT) as broker:
                client.settimeout(WAIT)
                broker.settimeout(WAIT)
                broker.sendall(client.recv(1 << 16))  # the CONNECT (one small write)
                answer.append(broker.recv(1 << 16))
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield server.getsockname()[1]
        thread.join(WAIT)
    assert answer and answer[0][:1] == b"\x20", f"no CONNACK from the broker: {answer}"


def subscribe(sub: Subscriber, clean: bool) -> tuple[Connection, bool]:
    """Connect ``sub`` as the checker does and wait for its SUBACK; the connection and
    Session Present."""
    conn, connack = sub._connect(clean)
    sub.connected(conn, connack.session_present)
    deadline = time.monotonic() + WAIT
    while sub.epoch not in sub.subscribed_at:
        assert time.monotonic() < deadline, "no SUBACK"
        sub.step(conn)
    return conn, connack.session_present


def publish(port: int, payload: bytes) -> None:
    """One acknowledged QoS 1 message to t/x."""
    conn = Connection(port, 5)
    conn.send(Connect("MQTT", 5, "pub", True, 0))
    assert isinstance(conn.recv(WAIT), ConnAck)
    conn.send(Publish("t/x", payload, 1, False, False, 1))
    assert conn.recv(WAIT) == PubAck(1)
    conn.leave("disconnect", (), 0)


def lose_clean_start_connack(sub: Subscriber, port: int) -> None:
    """``sub`` comes back with Clean Start; the broker stores it, the CONNACK is lost."""
    with connack_cut(port) as proxy:
        sub.port = proxy
        with pytest.raises((EOFError, OSError)):
            sub._connect(True)
    sub.port = port


@pytest.mark.timeout(60)
def test_a_clean_start_whose_connack_was_lost_is_sent_again(broker: Broker) -> None:
    sub = Subscriber(SPEC, 1, broker.port, threading.Condition())
    conn, present = subscribe(sub, clean=False)
    assert not present
    conn.leave("disconnect", (), 0)
    lose_clean_start_connack(sub, broker.port)
    # The draw (clean_p 0) says Clean Start 0; the client holds no session state: clean again.
    clean = sub._comeback_clean(first=False)
    assert clean
    conn, present = subscribe(sub, clean)
    assert not present and sub.epoch == 2, "a new session: owed from its SUBACK on"
    publish(broker.port, b"owed")
    deadline = time.monotonic() + WAIT
    while not sub.deliveries:
        assert time.monotonic() < deadline, f"the owed message not delivered within {WAIT} s"
        sub.step(conn)
    assert [d.payload for d in sub.deliveries] == [b"owed"]
    conn.leave("disconnect", (), 0)


@pytest.mark.timeout(60)
def test_the_broker_kept_the_new_session_that_the_clean_start_began(broker: Broker) -> None:
    """What the checker wrongly expected otherwise: resuming after the lost CONNACK finds
    the new, empty session (Session Present 1), not the old subscription."""
    sub = Subscriber(SPEC, 1, broker.port, threading.Condition())
    conn, _ = subscribe(sub, clean=False)
    conn.leave("disconnect", (), 0)
    lose_clean_start_connack(sub, broker.port)
    conn = Connection(broker.port, 5)
    conn.send(Connect("MQTT", 5, "sub1", False, 0))
    connack = conn.recv(WAIT)
    assert isinstance(connack, ConnAck) and connack.session_present
    publish(broker.port, b"unmatched")  # t/# of the old session would match it
    conn.send(Subscribe(1, (Subscription("t/#", 1),)))
    packet = conn.recv(WAIT)
    assert isinstance(packet, SubAck), packet  # nothing was queued before it
    publish(broker.port, b"matched")
    packet = conn.recv(WAIT)
    assert isinstance(packet, Publish) and packet.payload == b"matched", packet
    conn.leave("disconnect", (), 0)
