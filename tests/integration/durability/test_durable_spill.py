"""A durable session's queue past its limit in RAM waits in the commit log, not dropped.

A connected persistent-session subscriber stops reading (a tiny receive
buffer, nothing read, nothing acknowledged). Its publisher is held for
``backpressure_timeout``, then let go: the session is stuck, its queue in
RAM is full (``max_queued_messages``) and every further QoS 1 message for
it is in the commit log anyway. It waits there as an offset
(actors/sessions/journal/resumed.py) instead of being dropped ``queue_full`` (what a
clean session still does: test_broker_backpressure.py). When the
subscriber reads again it gets every message, in order, once.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt_testkit import TIMEOUT, Client, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Disconnect,
    Packet,
    PubAck,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
    encode,
)

Start = Callable[..., RunningBroker]
TOPIC = "spill/t"
MESSAGES = 3000  # three times max_queued_messages
PAYLOAD = b"x" * 1000


class SilentSubscriber:
    """A persistent-session subscriber with a tiny receive buffer that reads only when told."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # before connect
        self.sock.connect((host, port))
        self.sock.settimeout(TIMEOUT)
        self.decoder = Decoder(4)
        self.packets: list[Packet] = []
        self.sock.sendall(encode(Connect("MQTT", 4, "spill-sub", False, 600), 4))
        assert isinstance(self.next(), ConnAck)
        self.sock.sendall(encode(Subscribe(1, (Subscription(TOPIC, 1),)), 4))
        assert isinstance(self.next(), SubAck)

    def next(self) -> Packet:
        while not self.packets:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the broker closed the connection")
            self.packets.extend(self.decoder.feed(data))
        return self.packets.pop(0)

    def read_all(self, last: bytes) -> list[bytes]:
        """Read and acknowledge every PUBLISH up to the one carrying ``last`` (included)."""
        got: list[bytes] = []
        while not got or got[-1] != last:
            packet = self.next()
            assert isinstance(packet, Publish), packet
            got.append(packet.payload[:8])
            self.sock.sendall(encode(PubAck(packet.packet_id), 4))  # type: ignore[arg-type]
        return got


def test_a_stuck_durable_subscriber_loses_nothing_past_its_queue_limit(
        start_broker: Start, tmp_path: Path) -> None:
    running = start_broker(broker_config(tmp_path), sys_interval=0, backpressure_timeout=0.5)
    sub = SilentSubscriber(running.host, running.port)
    pub = Client(running.host, running.port, "spill-pub")
    try:
        assert pub.connect().rc == 0
        payloads = [b"%08d" % n + PAYLOAD for n in range(MESSAGES)]
        for payload in payloads[:-1]:
            pub.paho.publish(TOPIC, payload, 1)
        pub.publish(TOPIC, payloads[-1], qos=1, timeout=60)  # every PUBACK is back
        metrics = running.metrics()
        assert metrics["subscribers_stuck"] == 1, metrics  # it was let go of its publisher
        got = sub.read_all(payloads[-1][:8])
        wanted = [p[:8] for p in payloads]
        assert got == wanted, (len(got), sorted(set(wanted) - set(got))[:10],
                               [i for i, (a, b) in enumerate(zip(got, wanted)) if a != b][:5])
        assert running.metrics()["dropped"] == {}
    finally:
        sub.sock.close()
        pub.close()


class SpoolSubscriber(SilentSubscriber):
    """A persistent-session subscriber ("spool-sub") with a normal receive buffer; it
    only connects (the test subscribes once, then resumes the session)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self.decoder = Decoder(4)
        self.packets = []
        self.sock.sendall(encode(Connect("MQTT", 4, "spool-sub", False, 600), 4))
        assert isinstance(self.next(), ConnAck)


@pytest.mark.parametrize("limit", [{"max_queued_messages": 55},
                                   {"max_queued_messages": 0, "max_queued_bytes": 55 * 8}],
                         ids=["messages", "bytes"])
def test_a_spool_longer_than_the_queue_limit_is_fed_without_drops(
        start_broker: Start, tmp_path: Path, limit: dict[str, int]) -> None:
    """An offline session kept in RAM (queue_qos0_messages: no hibernation) queues
    ``max_queued_messages`` in RAM and the rest in the spool. When it comes back, the spool
    is fed to its RAM queue as acknowledgements make room. Chunks of 64 fed at once into a
    queue of 55 dropped 48 of the 200 from the middle (queue_full) while the newer ones
    behind them were delivered (seed 1093449900 of the crash checker)."""
    count = 200  # payloads of 8 bytes: 55 of them fill either limit
    running = start_broker(broker_config(tmp_path, queue_qos0_messages=True, **limit),
                           sys_interval=0)
    sub = SpoolSubscriber(running.host, running.port)
    sub.sock.sendall(encode(Subscribe(1, (Subscription(TOPIC, 1),)), 4))
    assert isinstance(sub.next(), SubAck)
    sub.sock.sendall(encode(Disconnect(), 4))
    assert sub.sock.recv(1) == b""  # the broker closed it: the session is offline
    sub.sock.close()
    pub = Client(running.host, running.port, "spool-pub")
    try:
        assert pub.connect().rc == 0
        payloads = [b"%08d" % n for n in range(count)]
        for payload in payloads[:-1]:
            pub.paho.publish(TOPIC, payload, 1)
        pub.publish(TOPIC, payloads[-1], qos=1, timeout=60)  # every PUBACK is back
        sub = SpoolSubscriber(running.host, running.port)
        got = sub.read_all(payloads[-1])
        assert got == payloads, (len(got), sorted(set(payloads) - set(got))[:10])
        assert running.metrics()["dropped"] == {}
    finally:
        sub.sock.close()
        pub.close()

