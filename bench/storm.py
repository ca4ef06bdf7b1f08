"""Benchmark: a subscription storm, and another client's QoS 1 round trips meanwhile. Stdlib, the codec, bench.brokers.

    python -m bench.storm                          # actorbroker and Mosquitto, 400,000 filters
    python -m bench.storm --packets 25 --reps 3    # 100,000 filters, three times each

:class:`Storm` sends SUBSCRIBE packets of many filters from a few clients as
fast as the broker reads them (encoded before it starts), reading the
SUBACKs on their own threads; two :class:`Prober` s, one QoS 0 and one
QoS 1, take turns publishing to a topic each subscribes to, timing each
PUBLISH until the message (and at QoS 1 the PUBACK) came back. ``main``
runs them against each broker in one run (each started by
:mod:`bench.brokers` at its default limits but for the queues, actorbroker
with its commit log in mode fsync) and prints, per broker, the storm's
length and each prober's round trips during it (count, p50, p99, max), and
actorbroker's p99 over Mosquitto's. The QoS 0 round trip times the broker's
loop: what slicing the storm protects. The QoS 1 one adds actorbroker's
fsync of everything written meanwhile, the storm's history included
(Mosquitto acknowledges before any disk write). The integration tests
(tests/integration/limits/) use the same two classes.
"""

from __future__ import annotations

import argparse
import gc
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from actorbroker.codec import (ConnAck, Connect, Decoder, Packet, PubAck, Publish, SubAck,
                               Subscribe, Subscription, encode)
from bench import brokers

__all__ = ["Prober", "Storm", "main", "measure"]


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
    """Round trips on its own topic: QoS 1 (PUBLISH -> PUBACK and the message back; with
    actorbroker's commit log the PUBACK waits for the fsync) or QoS 0 (the message back)."""

    def __init__(self, host: str, port: int, qos: int = 1) -> None:
        self.qos = qos
        self.topic = f"probe/q{qos}"
        self.client = _Client(host, port, f"prober-q{qos}")
        self.client.send(Subscribe(1, (Subscription(self.topic, qos),)))
        assert isinstance(self.client.recv(), SubAck)
        self.times: list[float] = []
        self._next_id = 1

    def round_trip(self) -> float:
        packet_id = self._next_id = self._next_id % 65000 + 1
        started = time.perf_counter()
        if self.qos:
            self.client.send(Publish(self.topic, b"x", 1, packet_id=packet_id))
        else:
            self.client.send(Publish(self.topic, b"x", 0))
        acked, received = not self.qos, False
        while not (acked and received):
            packet = self.client.recv()
            if isinstance(packet, PubAck) and packet.packet_id == packet_id:
                acked = True
            elif isinstance(packet, Publish) and packet.topic == self.topic:
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


def measure(host: str, port: int, *, clients: int, packets: int, filters: int,
            limit: float = 300.0) -> dict[str, float]:
    """One storm against the broker at ``host``:``port``, with the prober going meanwhile."""
    probers = (Prober(host, port, qos=1), Prober(host, port, qos=0))
    storm = Storm(host, port, clients=clients, packets=packets, filters=filters)
    try:
        for _ in range(50):
            probers[0].round_trip()
        idle = sorted(probers[0].times)
        for prober in probers:
            prober.times.clear()
        started = time.monotonic()
        storm.start()
        while not storm.done and time.monotonic() - started < limit:
            for prober in probers:  # one after the other: never two round trips at once
                prober.round_trip()
                time.sleep(0.005)  # about 50 round trips of each a second at most
        took = time.monotonic() - started
        storm.join(60)
        if storm.errors or len(storm.subacks) != clients * packets:
            raise RuntimeError(f"storm incomplete: {len(storm.subacks)} SUBACKs, "
                               f"errors {storm.errors[:3]}")
        result = {"filters": clients * packets * filters, "seconds": took,
                  "idle_p50": idle[len(idle) // 2], "idle_p99": idle[int(0.99 * len(idle))]}
        for prober in probers:
            prefix = "" if prober.qos else "q0_"
            result.update({f"{prefix}probes": len(prober.times),
                           f"{prefix}p50": prober.percentile(0.5),
                           f"{prefix}p99": prober.percentile(0.99),
                           f"{prefix}max": max(prober.times)})
        return result
    finally:
        storm.close()
        for prober in probers:
            prober.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.storm", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--brokers", default="actorbroker,mosquitto")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--packets", type=int, default=100, help="SUBSCRIBEs per client")
    parser.add_argument("--filters", type=int, default=1000, help="filters per SUBSCRIBE")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args(argv)
    p99: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-storm-") as tmp:
        for rep in range(args.reps):
            for name in args.brokers.split(","):
                broker = brokers.start(name, Path(tmp) / f"{name}-{rep}")
                try:
                    r = measure("127.0.0.1", broker.port, clients=args.clients,
                                packets=args.packets, filters=args.filters)
                finally:
                    broker.stop()
                print(f"{name:12} rep {rep + 1}: {r['filters']:,.0f} filters in"
                      f" {r['seconds']:.1f} s; idle QoS 1 p50 {r['idle_p50'] * 1e3:.1f} ms",
                      flush=True)
                for qos, prefix in ((0, "q0_"), (1, "")):
                    p99.setdefault((name, qos), []).append(r[f"{prefix}p99"])
                    print(f"{'':12}   QoS {qos} during: {r[prefix + 'probes']:.0f} round trips,"
                          f" p50 {r[prefix + 'p50'] * 1e3:.0f} ms, p99"
                          f" {r[prefix + 'p99'] * 1e3:.0f} ms, max {r[prefix + 'max'] * 1e3:.0f} ms",
                          flush=True)
    for qos in (0, 1):
        if ("actorbroker", qos) in p99 and ("mosquitto", qos) in p99:
            ours, theirs = sorted(p99["actorbroker", qos]), sorted(p99["mosquitto", qos])
            print(f"QoS {qos} p99 during the storm, medians: actorbroker"
                  f" {ours[len(ours) // 2] * 1e3:.0f} ms, mosquitto"
                  f" {theirs[len(theirs) // 2] * 1e3:.0f} ms, ratio"
                  f" {ours[len(ours) // 2] / max(theirs[len(theirs) // 2], 1e-6):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
