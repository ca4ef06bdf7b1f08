"""A subscription storm and a prober timing QoS 1 round trips meanwhile (raw sockets, threads).

:class:`Storm` sends SUBSCRIBE packets of many filters from a few clients as
fast as the broker reads them, reading the SUBACKs on its own thread;
:class:`Prober` is another client publishing QoS 1 to a topic it subscribes
to, timing each PUBLISH until both its PUBACK and the message came back.
"""

from __future__ import annotations

import gc
import socket
import threading
import time

from actorbroker.codec import (ConnAck, Connect, Decoder, Packet, PubAck, Publish, SubAck,
                               Subscribe, Subscription, encode)


class _Client:
    def __init__(self, host: str, port: int, client_id: str, level: int = 4) -> None:
        self.level = level
        self.sock = socket.create_connection((host, port), timeout=30)
        # Without it the prober's PUBACK and its next PUBLISH meet Nagle and the
        # broker's delayed ACK: every round trip took 40 ms more, storm or not.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = Decoder(level)
        self.pending: list[Packet] = []
        self.send(Connect("MQTT", level, client_id, True, 0))
        connack = self.recv()
        assert isinstance(connack, ConnAck) and connack.reason_code == 0, connack

    def send(self, packet: Packet) -> None:
        self.sock.sendall(encode(packet, self.level))

    def recv(self) -> Packet:
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("closed by the broker")
            self.pending.extend(self.decoder.feed(data))
        return self.pending.pop(0)

    def close(self) -> None:
        self.sock.close()


class Storm:
    """``clients`` x ``packets`` SUBSCRIBEs of ``filters`` filters each."""

    def __init__(self, host: str, port: int, *, clients: int, packets: int, filters: int,
                 level: int = 4) -> None:
        self.clients = [_Client(host, port, f"storm-{i}", level) for i in range(clients)]
        self.packets = packets
        self.filters = filters
        self.subacks: list[SubAck] = []
        self.errors: list[BaseException] = []
        # Encoded before the start: encoding on the storm's threads would take this
        # process's GIL from the prober, and its round trips would time the test, not the broker.
        self._encoded = [[encode(Subscribe(n % 65535 + 1, tuple(
            Subscription(f"storm/{i}/{n}/{k}/+", 0) for k in range(filters))), level)
            for n in range(packets)] for i in range(clients)]
        self._threads = [t for i, c in enumerate(self.clients) for t in (
            threading.Thread(target=self._send, args=(i, c)),
            threading.Thread(target=self._read, args=(c,)))]

    def start(self) -> None:
        # The encoded storm is 100,000 objects in this process: its full collections
        # (100-150 ms each) stalled the prober, timing the test instead of the broker.
        gc.collect()
        gc.freeze()
        for t in self._threads:
            t.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def done(self) -> bool:
        return len(self.subacks) >= len(self.clients) * self.packets or bool(self.errors)

    def _send(self, index: int, client: _Client) -> None:
        try:
            for data in self._encoded[index]:
                client.sock.sendall(data)
        except OSError as exc:
            self.errors.append(exc)

    def _read(self, client: _Client) -> None:
        try:
            for _ in range(self.packets):
                packet = client.recv()
                assert isinstance(packet, SubAck), packet
                self.subacks.append(packet)
        except (OSError, EOFError, AssertionError) as exc:
            self.errors.append(exc)

    def close(self) -> None:
        for c in self.clients:
            c.close()
        gc.unfreeze()


class Prober:
    """QoS 1 round trips (PUBLISH -> PUBACK and the message back) on its own topic."""

    def __init__(self, host: str, port: int) -> None:
        self.client = _Client(host, port, "prober")
        self.client.send(Subscribe(1, (Subscription("probe/t", 1),)))
        assert isinstance(self.client.recv(), SubAck)
        self.times: list[float] = []
        self._next_id = 1

    def round_trip(self) -> float:
        packet_id = self._next_id = self._next_id % 65000 + 1
        started = time.perf_counter()
        self.client.send(Publish("probe/t", b"x", 1, packet_id=packet_id))
        acked = received = False
        while not (acked and received):
            packet = self.client.recv()
            if isinstance(packet, PubAck) and packet.packet_id == packet_id:
                acked = True
            elif isinstance(packet, Publish) and packet.topic == "probe/t":
                received = True
                if packet.qos:
                    assert packet.packet_id is not None
                    self.client.send(PubAck(packet.packet_id))
        took = time.perf_counter() - started
        self.times.append(took)
        return took

    def percentile(self, p: float) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    def close(self) -> None:
        self.client.close()
