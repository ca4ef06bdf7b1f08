"""Backpressure at broker level: a slower subscriber slows its publishers, a stuck one costs only itself.

* With the default limits, publishers that outrun their subscribers lose
  nothing: QoS 1 pairs whose publishers keep 100 unacknowledged, and 8 QoS
  0 publishers into one wildcard subscriber (which lost a third of its
  messages, ``queue_full``, before publishers' reads waited for their
  subscribers). The clients run in a child process (``flow_clients.py``).
  The same fan-in into a shared group of two MQTT 5 members loses nothing
  either.
* A subscriber that never reads holds its publisher for at most
  ``backpressure_timeout``, then drops what does not fit (counted
  ``queue_full``, and ``subscribers_stuck``); a publisher/subscriber pair
  beside it is not held at all.

* A subscriber that stops reading (a socket with a tiny receive buffer that
  is never read) and a normal one share a topic; a publisher sends 5 MB at
  the broker's pace (QoS 1, 20 in flight), subscribers get QoS 0. The
  kernel takes ~1.6 MB for the stuck socket before the broker's output
  backs up, so it has queued and dropped long before the end. The normal one receives
  every message at its usual pace (compared with a run without the stuck
  one); the stuck one's session queues up to ``max_queued_messages`` and
  drops the rest, counted ``queue_full`` in the metrics and under
  ``$SYS/broker/messages/dropped/queue_full``. Once it reads again it gets
  exactly what was not counted as dropped.
* A publisher blasting QoS 0 as fast as its socket takes, at a subscriber
  that reads slowly: the broker pauses reading the publisher's socket
  (``read_pauses``) and the process's resident memory stays bounded.
"""

from __future__ import annotations

import gc
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mqtt_testkit import TIMEOUT, Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Packet,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
    encode,
)

sys.path.insert(0, str(Path(__file__).parent))

from census import HERE, rss_bytes  # noqa: E402

Start = Callable[..., RunningBroker]
TOPIC = "bp/t"
MESSAGES = 5000
PAYLOAD = b"x" * 1000


class StuckSubscriber:
    """A subscriber whose socket has a tiny receive buffer and which stops reading."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # before connect
        self.sock.connect((host, port))
        self.sock.settimeout(TIMEOUT)
        self.decoder = Decoder(4)
        self.packets: list[Packet] = []
        self.sock.sendall(encode(Connect("MQTT", 4, client_id, True, 60), 4))
        assert self.next() == ConnAck(False, 0)
        self.sock.sendall(encode(Subscribe(1, (Subscription(TOPIC, 0),)), 4))
        assert isinstance(self.next(), SubAck)

    def next(self) -> Packet:
        while not self.packets:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the broker closed the connection")
            self.packets.extend(self.decoder.feed(data))
        return self.packets.pop(0)

    def read_until(self, payload: bytes) -> list[Publish]:
        """Read again: every PUBLISH until the one carrying ``payload`` (excluded)."""
        got: list[Publish] = []
        while True:
            packet = self.next()
            assert isinstance(packet, Publish), packet
            if packet.payload == payload:
                return got
            got.append(packet)

    def close(self) -> None:
        self.sock.close()


def _blast(pub: Client, count: int, end: bytes, timeout: float = TIMEOUT) -> None:
    """Publish at the broker's pace: QoS 1, paho keeps 20 in flight and queues the rest."""
    for _ in range(count):
        pub.paho.publish(TOPIC, PAYLOAD, 1)
    pub.publish(TOPIC, end, qos=1, timeout=timeout)  # its PUBACK comes after every earlier one


def _receive(sub: Client, count: int, end: bytes) -> float:
    """Wait for ``count`` messages then ``end``; the seconds it took."""
    started = time.monotonic()
    payloads = [m.payload for m in sub.expect_many(count + 1, timeout=30)]
    assert payloads[:-1] == [PAYLOAD] * count and payloads[-1] == end
    return time.monotonic() - started


def test_a_stuck_subscriber_does_not_slow_the_others_and_its_drops_are_counted(
        start_broker: Start) -> None:
    running = start_broker(sys_interval=0.2)
    host, port = running.host, running.port
    normal = Client(host, port, "bp-normal")
    pub = Client(host, port, "bp-pub")
    watcher = Client(host, port, "bp-watch")
    stuck: StuckSubscriber | None = None
    try:
        assert normal.connect().rc == 0 and pub.connect().rc == 0 and watcher.connect().rc == 0
        normal.subscribe(TOPIC, 0)
        # Pace of the normal subscriber alone...
        receiving = threading.Thread(target=lambda: alone.append(_receive(normal, MESSAGES,
                                                                          b"end-1")))
        alone: list[float] = []
        receiving.start()
        _blast(pub, MESSAGES, b"end-1")
        receiving.join()
        # ...and next to a subscriber that stopped reading.
        stuck = StuckSubscriber(host, port, "bp-stuck")
        beside: list[float] = []
        receiving = threading.Thread(target=lambda: beside.append(_receive(normal, MESSAGES,
                                                                           b"end-2")))
        receiving.start()
        _blast(pub, MESSAGES, b"end-2")
        receiving.join()
        assert alone and beside, "the normal subscriber did not get everything"
        assert beside[0] < 3 * alone[0] + 1.0, (alone, beside)

        metrics = running.metrics()
        dropped = metrics["dropped"].get("queue_full", 0)
        assert dropped > 0 and metrics["output_overflows"] == 0, metrics
        watcher.subscribe("$SYS/broker/messages/dropped/queue_full", 0)
        while (seen := watcher.expect(timeout=5).payload) != str(dropped).encode():
            assert int(seen) < dropped  # older values while $SYS catches up

        # Reading again, it gets exactly what was not counted as dropped (of its
        # 5000 and end-2), then a marker published once it has them: nothing else.
        got = [stuck.next() for _ in range(MESSAGES + 1 - dropped)]
        assert all(isinstance(p, Publish) and p.topic == TOPIC for p in got)
        pub.publish(TOPIC, b"end-3", qos=1)
        assert stuck.read_until(b"end-3") == []
        assert running.metrics()["dropped"].get("queue_full", 0) == dropped
    finally:
        for c in (normal, pub, watcher):
            c.close()
        if stuck is not None:
            stuck.close()


BLAST_SECONDS = 3.0
#: Growth allowed while blasting: the publisher's unread input is bounded by
#: read pausing (a few reads of up to 256 KiB, decoded), the slow
#: subscriber's session by max_queued_messages (1000 x 1 KiB) and its socket
#: by the output high-water mark; the rest is allocator noise.
RSS_BOUND = 64 * 1024 * 1024


def test_a_fast_publisher_is_slowed_by_pausing_its_reads_not_by_memory(
        start_broker: Start) -> None:
    running = start_broker(sys_interval=0)
    host, port = running.host, running.port
    slow = RawClient(host, port)
    blaster = RawClient(host, port)
    assert slow.connect("bp-slow") == ConnAck(False, 0)
    slow.send(Subscribe(1, (Subscription("blast/#", 0),)))
    assert isinstance(slow.recv(), SubAck)
    assert blaster.connect("bp-blaster") == ConnAck(False, 0)
    chunk = b"".join(encode(Publish(f"blast/{i % 4}", b"y" * 1000), 4) for i in range(64))
    stop = threading.Event()
    counts = {"sent": 0, "read": 0}

    def blast() -> None:
        try:
            while not stop.is_set():
                blaster.sock.sendall(chunk)
                counts["sent"] += len(chunk)
        except OSError:
            assert stop.is_set()  # only our own shutdown ends it

    def read_slowly() -> None:
        slow.sock.settimeout(0.5)
        while not stop.wait(0.005):  # the workload: a reader that takes 4 KiB per 5 ms
            try:
                counts["read"] += len(slow.sock.recv(4096))
            except TimeoutError:
                pass

    gc.collect()
    baseline = rss_bytes()
    threads = [threading.Thread(target=blast), threading.Thread(target=read_slowly)]
    for t in threads:
        t.start()
    peak = baseline
    try:
        deadline = time.monotonic() + BLAST_SECONDS
        while time.monotonic() < deadline:
            peak = max(peak, rss_bytes())
            stop.wait(0.05)
    finally:
        stop.set()
        blaster.sock.shutdown(socket.SHUT_RDWR)  # unblocks a sendall stuck on a full socket
        for t in threads:
            t.join(10)
        slow.close()
        blaster.close()
    metrics = running.metrics()
    assert metrics["read_pauses"] > 0, metrics  # the broker paused reading the publisher
    assert counts["sent"] > 10 * 1024 * 1024, counts  # it did blast
    assert peak - baseline < RSS_BOUND, (
        f"RSS grew by {(peak - baseline) / 2**20:.1f} MiB while "
        f"{counts['sent'] / 2**20:.0f} MiB were blasted")


def _flow(running: RunningBroker, mode: str, *args: str) -> dict[str, object]:
    """Run ``flow_clients.py MODE`` against ``running`` in a child process; its report."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "flow_clients.py"), mode, "--host", running.host,
         "--port", str(running.port), *args],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, object] = json.loads(proc.stdout)
    return report


def test_qos1_pairs_faster_than_their_subscribers_lose_nothing_with_default_limits(
        start_broker: Start) -> None:
    running = start_broker(sys_interval=0)
    # Subscribers acknowledge 10 ms late: 20 in flight each is ~2,000 msg/s per pair,
    # slower than their publishers, which keep 100 unacknowledged.
    report = _flow(running, "pairs", "--count", "20", "--messages", "2000", "--qos", "1",
                   "--window", "100", "--ack-delay", "0.01")
    assert (report["published"], report["lost"], report["duplicates"]) == (40_000, 0, 0), report
    metrics = running.metrics()
    assert metrics["dropped"] == {} and metrics["read_pauses"] > 0, metrics


def test_qos0_fan_in_faster_than_its_subscriber_loses_nothing_with_default_limits(
        start_broker: Start) -> None:
    running = start_broker(sys_interval=0)
    report = _flow(running, "fanin", "--count", "8", "--messages", "10000")
    assert (report["published"], report["lost"], report["duplicates"]) == (80_000, 0, 0), report
    assert running.metrics()["dropped"] == {}


def test_qos0_fan_in_to_a_shared_group_loses_nothing_with_default_limits(
        start_broker: Start) -> None:
    # The same fan-in into an MQTT 5 shared group of two members: its deliveries carry
    # the publishers' read credit as plain subscriptions' do (half of the messages and
    # more were dropped, queue_full, while they did not).
    running = start_broker(sys_interval=0)
    report = _flow(running, "shared", "--count", "8", "--messages", "10000")
    assert (report["published"], report["lost"], report["duplicates"]) == (80_000, 0, 0), report
    assert running.metrics()["dropped"] == {}


STUCK_TIMEOUT = 3.0  # long beside a pair of 2,000 messages, short enough for a test


def test_a_stuck_subscriber_holds_its_publisher_for_the_timeout_only_and_no_one_else(
        start_broker: Start) -> None:
    running = start_broker(sys_interval=0, backpressure_timeout=STUCK_TIMEOUT)
    host, port = running.host, running.port
    stuck = StuckSubscriber(host, port, "held-stuck")
    held, pub, sub = (Client(host, port, cid) for cid in ("held-pub", "pair-pub", "pair-sub"))
    try:
        assert held.connect().rc == 0 and pub.connect().rc == 0 and sub.connect().rc == 0
        sub.subscribe("pair/t", 1)
        started = time.monotonic()
        finished: list[float] = []

        def blast() -> None:  # every PUBACK back, the last one included
            _blast(held, MESSAGES, b"end", timeout=30)
            finished.append(time.monotonic())

        blasting = threading.Thread(target=blast)
        blasting.start()
        # The stuck subscriber fills up and holds its publisher: its reads pause.
        running.wait_until(lambda m: m["read_pauses"] > 0, timeout=10)
        # A pair beside it goes at its own pace meanwhile.
        for n in range(2000):
            pub.paho.publish("pair/t", str(n).encode(), 1)
        got = [m.payload for m in sub.expect_many(2000, timeout=30)]
        assert got == [str(n).encode() for n in range(2000)]
        metrics = running.metrics()
        assert metrics["subscribers_stuck"] == 0 and blasting.is_alive(), metrics  # still held
        # Then the stuck one lets go of its publisher, which finishes; what did not fit in
        # its queue is dropped and counted.
        blasting.join(40)
        assert finished and finished[0] - started >= STUCK_TIMEOUT
        metrics = running.metrics()
        assert metrics["subscribers_stuck"] == 1, metrics
        assert metrics["dropped"].get("queue_full", 0) > 0, metrics
        assert metrics["credits_expired"] == 0, metrics  # given back by the session itself
    finally:
        for c in (held, pub, sub):
            c.close()
        stuck.close()
