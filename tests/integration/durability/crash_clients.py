"""MQTT 3.1.1 clients that survive their broker being killed: persistent sessions, resends, exactly-once bookkeeping.

Each client is a thread that connects (Clean Session 0), works, and when the
connection breaks (the broker was killed) reconnects until told to stop,
keeping its own session state across reconnects as the spec requires of a
client ([MQTT-4.4.0-1]):

* :class:`Publisher` publishes numbered payloads at QoS 1 or 2 with at most
  ``window`` unacknowledged; after a reconnect it resends each unacknowledged
  PUBLISH with DUP=1 under its packet id, and PUBREL for those the broker
  already PUBRECed. ``acknowledged`` holds the payloads the broker took
  responsibility for (PUBACK; PUBREC at QoS 2).
* :class:`Subscriber` subscribes once (until a SUBACK comes back), then
  records every message; a QoS 2 PUBLISH whose packet id awaits PUBREL is a
  retry and is not recorded again (method B of section 4.3.3, on the client
  side), so a QoS 2 payload recorded twice is a duplicate the broker sent.

Reconnect pauses (a few ms) are the client's retry behaviour, not
synchronisation: the test waits on :meth:`Subscriber.wait_for`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter

from actorbroker.codec import (
    ConnAck,
    Connect,
    Properties,
    Decoder,
    Disconnect,
    Packet,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Subscription,
    encode,
)

LEVEL = 4
RETRY = 0.02  # seconds between two connection attempts


class _Client(threading.Thread):
    """Connect, run :meth:`work` until the connection breaks, reconnect; until stopped."""

    def __init__(self, client_id: str, port: int, level: int = LEVEL) -> None:
        super().__init__(name=client_id, daemon=True)
        self.client_id = client_id
        self.port = port
        self.level = level
        self.offline = 0.0  # seconds to stay away after the next connection ends
        self.stopping = threading.Event()
        self.connects = 0
        self.errors: list[str] = []
        self._sock: socket.socket | None = None
        self._decoder = Decoder(level)
        self._packets: list[Packet] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._session()
            except (OSError, EOFError):
                pass
            except Exception as exc:  # a bug in the test client: report, do not spin
                self.errors.append(repr(exc))
                return
            finally:
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None
            self.stopping.wait(max(RETRY, self.offline))
            self.offline = 0.0

    def _session(self) -> None:
        self._sock = socket.create_connection(("127.0.0.1", self.port), timeout=2.0)
        self._decoder = Decoder(self.level)
        self._packets = []
        # No keepalive: idle is fine. MQTT 5 needs a Session Expiry Interval to keep the session.
        props = Properties(session_expiry_interval=3600) if self.level == 5 else Properties()
        self.send(Connect("MQTT", self.level, self.client_id, False, 0, properties=props))
        connack = self.recv(5.0)
        if not isinstance(connack, ConnAck) or connack.reason_code != 0:
            raise OSError(f"refused: {connack}")
        self.connects += 1
        self.connected(connack.session_present)
        while not self.stopping.is_set():
            self.work()
        self.send(Disconnect())

    def drop(self, seconds: float) -> None:
        """Break the connection from outside, then stay away ``seconds`` (an offline spell)."""
        self.offline = seconds
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def send(self, *packets: Packet) -> None:
        assert self._sock is not None
        self._sock.sendall(b"".join(encode(p, self.level) for p in packets))

    def recv(self, timeout: float) -> Packet | None:
        """The next packet, or None after ``timeout`` seconds without one."""
        assert self._sock is not None
        self._sock.settimeout(timeout)
        while not self._packets:
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                return None
            if not data:
                raise EOFError("closed by the broker")
            self._packets.extend(self._decoder.feed(data))
        return self._packets.pop(0)

    def connected(self, session_present: bool) -> None:
        """Called after each CONNACK."""

    def work(self) -> None:
        """One step of the client's job (reads with a short timeout)."""


class Publisher(_Client):
    """Publishes ``{client_id}-{n}`` to ``topic`` at ``qos`` (see the module doc)."""

    def __init__(self, client_id: str, port: int, topic: str, qos: int, window: int = 10) -> None:
        super().__init__(client_id, port)
        self.topic, self.qos, self.window = topic, qos, window
        self.publishing = threading.Event()
        self.publishing.set()
        self.acknowledged: set[bytes] = set()
        self.sent = 0
        self._next_id = 0
        self._inflight: dict[int, tuple[bytes, bool]] = {}  # packet id -> (payload, PUBREC seen)
        self.lock = threading.Lock()

    @property
    def settled(self) -> bool:
        """Nothing unacknowledged (every flow completed)."""
        return not self._inflight

    def connected(self, session_present: bool) -> None:
        for packet_id, (payload, released) in list(self._inflight.items()):
            if released:
                self.send(PubRel(packet_id))
            else:
                self.send(Publish(self.topic, payload, self.qos, False, True, packet_id))

    def work(self) -> None:
        while self.publishing.is_set() and len(self._inflight) < self.window:
            self._next_id = self._next_id % 65535 + 1
            payload = f"{self.client_id}-{self.sent}".encode()
            self.sent += 1
            self._inflight[self._next_id] = (payload, False)
            self.send(Publish(self.topic, payload, self.qos, False, False, self._next_id))
        packet = self.recv(0.05)
        if isinstance(packet, PubAck) and packet.packet_id in self._inflight:
            with self.lock:
                self.acknowledged.add(self._inflight.pop(packet.packet_id)[0])
        elif isinstance(packet, PubRec) and packet.packet_id in self._inflight:
            payload = self._inflight[packet.packet_id][0]
            with self.lock:
                self.acknowledged.add(payload)
            self._inflight[packet.packet_id] = (payload, True)
            self.send(PubRel(packet.packet_id))
        elif isinstance(packet, PubComp):
            self._inflight.pop(packet.packet_id, None)


class Subscriber(_Client):
    """Subscribes ``topic_filter`` at ``qos`` once; records what arrives (see the module doc)."""

    def __init__(self, client_id: str, port: int, topic_filter: str, qos: int,
                 level: int = LEVEL) -> None:
        super().__init__(client_id, port, level)
        self.topic_filter, self.qos = topic_filter, qos
        self.subscribed = threading.Event()
        self.received: Counter[bytes] = Counter()
        self.qos2_copies: Counter[bytes] = Counter()  # payloads received at QoS 2
        self._awaiting_pubrel: set[int] = set()
        self._changed = threading.Condition()

    def connected(self, session_present: bool) -> None:
        if not self.subscribed.is_set():
            self.send(Subscribe(1, (Subscription(self.topic_filter, self.qos),)))

    def work(self) -> None:
        packet = self.recv(0.05)
        if isinstance(packet, SubAck):
            self.subscribed.set()
        elif isinstance(packet, Publish):
            if packet.qos == 2:
                assert packet.packet_id is not None
                if packet.packet_id not in self._awaiting_pubrel:
                    self._awaiting_pubrel.add(packet.packet_id)
                    self._record(packet.payload, qos2=True)
                self.send(PubRec(packet.packet_id))
            else:
                self._record(packet.payload, qos2=False)
                if packet.qos == 1:
                    assert packet.packet_id is not None
                    self.send(PubAck(packet.packet_id))
        elif isinstance(packet, PubRel):
            self._awaiting_pubrel.discard(packet.packet_id)
            self.send(PubComp(packet.packet_id))

    def _record(self, payload: bytes, *, qos2: bool) -> None:
        with self._changed:
            self.received[payload] += 1
            if qos2:
                self.qos2_copies[payload] += 1
            self._changed.notify_all()

    def missing(self, expected: set[bytes]) -> set[bytes]:
        with self._changed:
            return {p for p in expected if p not in self.received}

    def wait_for(self, expected: set[bytes], timeout: float) -> set[bytes]:
        """Wait until every payload of ``expected`` arrived; return those still missing."""
        with self._changed:
            self._changed.wait_for(lambda: all(p in self.received for p in expected), timeout)
        return self.missing(expected)


def start_clients(subs: list[Subscriber], pubs: list[Publisher], seed: int) -> None:
    """Start the subscribers, wait for each one's SUBACK, then start the publishers."""
    for sub in subs:
        sub.start()
    for sub in subs:
        assert sub.subscribed.wait(10), f"seed {seed}: {sub.client_id} never got its SUBACK"
    for pub in pubs:
        pub.start()


def settle(pubs: list[Publisher], timeout: float = 30.0) -> set[bytes]:
    """Stop new publishes, let the publishers finish their flows; every payload acknowledged."""
    for pub in pubs:
        pub.publishing.clear()
    deadline = time.monotonic() + timeout
    while not all(p.settled for p in pubs) and time.monotonic() < deadline:
        time.sleep(0.01)  # the publishers finish their flows on their own threads
    return set().union(*(p.acknowledged for p in pubs))
