"""A PUBLISH the broker never wrote goes out with DUP=0 later: after a reconnect, a SIGTERM restart, or a kill -9 once its record is stored.

The case of docs/storage.md (a DISCONNECT in the same write as the acks), on a real ``actorbroker serve`` with raw sockets. A
durable QoS 1 subscriber ``S`` has a full inflight window and a queue
behind it; it sends the window's PUBACKs and DISCONNECT in one write and
half-closes. The acks free the window and the session refills it, but
those PUBLISHes wait for their ``OutboundSent`` records while the
DISCONNECT closes the connection: they are never written. When ``S`` comes
back, they are the first attempt to send them, so DUP=0 ([MQTT-3.3.1-1]).

``S`` then behaves as the issue's client: it drops every DUP=1 PUBLISH
without acknowledging it (it takes DUP=1 for a copy it already had). Sent
with DUP=1, the never-written PUBLISHes were never acknowledged, the window
stayed full and nothing behind it was ever sent. Here every message must
arrive and no DUP=1 PUBLISH at all (``S`` acknowledged everything it got).
"""

from __future__ import annotations

import re
import select
import socket
import time
from pathlib import Path

import pytest
from crash_broker import BrokerProcess, free_port, wait_for_records

from actorbroker.codec import (ConnAck, Connect, Decoder, Disconnect, Packet, PubAck, Publish,
                               SubAck, Subscribe, Subscription, encode)
from actorbroker.persistence.records import OutboundUnsent

MESSAGES = 60
WINDOW = 20  # the default [limits] max_inflight_messages
LEVEL = 4
LOADED = re.compile(r"durable session loaded from the commit log "
                    r"\(1 subscription\(s\), (\d+) in flight, (\d+) queued\)")


class Wire:
    """One raw MQTT 3.1.1 connection (the project's codec, a blocking socket)."""

    def __init__(self, port: int, client_id: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.decoder = Decoder(LEVEL)
        self.packets: list[Packet] = []
        self.eof = False
        self.send(Connect("MQTT", LEVEL, client_id, False, 60))
        self.connack = self.recv()
        assert isinstance(self.connack, ConnAck) and self.connack.reason_code == 0, self.connack

    def send(self, *packets: Packet) -> None:
        self.sock.sendall(b"".join(encode(p, LEVEL) for p in packets))

    def pump(self, timeout: float) -> None:
        """Read what arrives within ``timeout`` into ``packets``; sets ``eof``."""
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if ready:
            data = self.sock.recv(65536)
            self.eof = not data
            self.packets.extend(self.decoder.feed(data))

    def recv(self, timeout: float = 10.0) -> Packet:
        deadline = time.monotonic() + timeout
        while not self.packets:
            assert not self.eof and time.monotonic() < deadline, "no packet from the broker"
            self.pump(deadline - time.monotonic())
        return self.packets.pop(0)

    def close(self) -> None:
        self.send(Disconnect())
        self.sock.close()


def publish_all(port: int) -> None:
    """``P``: MESSAGES numbered QoS 1 messages, each acknowledged (stored) before the next."""
    wire = Wire(port, "P")
    for n in range(MESSAGES):
        wire.send(Publish("dup/seq", b"%d" % n, 1, packet_id=n + 1))
        assert wire.recv() == PubAck(n + 1)
    wire.close()


def fill_window_then_leave(port: int) -> list[int]:
    """``S`` resumes, takes its full window, then acks all of it with DISCONNECT in one
    write, half-closes and reads until the broker closes. Returns the numbers it had."""
    wire = Wire(port, "S")
    assert wire.connack.session_present
    got: list[Publish] = []
    while len(got) < WINDOW:
        packet = wire.recv()
        assert isinstance(packet, Publish) and not packet.dup, packet
        got.append(packet)
    wire.sock.sendall(b"".join(encode(PubAck(p.packet_id or 0), LEVEL) for p in got)
                      + encode(Disconnect(), LEVEL))
    wire.sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + 10
    while not wire.eof and time.monotonic() < deadline:
        wire.pump(0.1)
    assert wire.eof, "the broker did not close after DISCONNECT"
    # The scenario: the refilled window was never written (DISCONNECT closed it first).
    assert wire.packets == [], f"written after the acks: {wire.packets[:3]}"
    wire.sock.close()
    return [int(p.payload) for p in got]


def drain_dropping_dup(port: int) -> tuple[list[int], list[Publish]]:
    """``S`` as the issue's client: DUP=1 PUBLISHes dropped unacknowledged, others acked.
    Until every message arrived or 5 s pass without a packet; (numbers, DUP=1 dropped)."""
    wire = Wire(port, "S")
    assert wire.connack.session_present
    got: list[int] = []
    dropped: list[Publish] = []
    last = time.monotonic()
    while len(got) + len(dropped) < MESSAGES - WINDOW and time.monotonic() - last < 5.0:
        wire.pump(0.1)
        assert not wire.eof, "the broker closed the subscriber"
        while wire.packets:
            last = time.monotonic()
            packet = wire.packets.pop(0)
            assert isinstance(packet, Publish) and packet.packet_id is not None, packet
            if packet.dup:
                dropped.append(packet)
                continue
            got.append(int(packet.payload))
            wire.send(PubAck(packet.packet_id))
    wire.close()
    return got, dropped


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop", ["reconnect", "sigterm", "kill-after-record"])
def test_a_window_never_written_before_disconnect_comes_back_with_dup_0(
        tmp_path: Path, stop: str) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, free_port(), tmp_path / "broker.log")
    broker.start()
    try:
        wire = Wire(broker.port, "S")
        wire.send(Subscribe(1, (Subscription("dup/#", 1),)))
        assert isinstance(wire.recv(), SubAck)
        wire.close()
        publish_all(broker.port)  # S is offline: all of it waits in its queue
        first = fill_window_then_leave(broker.port)
        if stop == "sigterm":
            broker.stop()
            broker.start()
        elif stop == "kill-after-record":  # once the record is stored, a crash keeps it too
            wait_for_records(data, lambda records: sum(
                isinstance(r, OutboundUnsent) for r in records) >= WINDOW)
            broker.kill()
            broker.start()
        got, dropped = drain_dropping_dup(broker.port)
    finally:
        broker.stop()
    log = (tmp_path / "broker.log").read_text(errors="replace")
    assert not dropped, (f"{len(dropped)} PUBLISH(es) the client never had came with DUP=1 "
                         f"(first {dropped[:3]})\n{log[-2000:]}")
    assert sorted(first + got) == list(range(MESSAGES)), (first, got)
    assert "Traceback" not in log, log[-3000:]
    if stop != "reconnect":  # the restart found the never-written window and the queue behind
        since = log[log.rindex("--- start 2"):]
        restarted = [(int(m[1]), int(m[2])) for m in LOADED.finditer(since)]
        assert (WINDOW, MESSAGES - 2 * WINDOW) in restarted, restarted
