"""Test support: publishers that outrun their subscribers, run in a child process; loss counted.

Started as a script by the broker tests (``python flow_clients.py MODE
--host H --port P ...``), so the clients have a core of their own; prints
one JSON object: what was published and acknowledged, what arrived, what
was lost. Like a load generator written by someone else, the publishers
go as fast as TCP and their window allow, with no end-to-end credit: only
the broker can keep its subscribers' queues from overflowing. MQTT 3.1.1
through the project's codec (MQTT 5 for shared-group members).

Modes:

* ``pairs``: ``count`` publisher/subscriber pairs, each on its own topic,
  at ``qos``; each publisher sends ``messages`` with at most ``window``
  QoS 1 PUBLISHes unacknowledged; each subscriber reads as fast as it can
  and acknowledges what it read ``ack_delay`` seconds later (0: at once),
  as a client that hands each message to slower work first.
* ``fanin``: ``publishers`` QoS 0 publishers, ``messages`` each, into one
  subscriber of ``fanin/+`` reading as fast as it can.
* ``shared``: the same publishers into an MQTT 5 shared group of two
  members (``$share/g/shared/+``): each message reaches one of them.

A payload is ``publisher index:sequence number``; a message is lost if it
was published (QoS 1: acknowledged) and never arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from load_clients import LEVEL, Conn

from actorbroker.codec import ConnAck, Connect, PubAck, Publish, SubAck, Subscribe, Subscription
from actorbroker.codec import encode


class SlowSubscriber(Conn):
    """A subscriber that acknowledges what it read ``ACK_DELAY`` seconds later."""

    ACK_DELAY = 0.0

    def send_acks(self, data: bytes) -> None:
        asyncio.get_running_loop().call_later(self.ACK_DELAY, super().send_acks, data)


class Subscriber5(Conn):
    """An MQTT 5 subscriber (shared subscriptions), acknowledging at once."""

    level = 5


class Publisher(Conn):
    """A connection that waits for the socket to take its output (QoS 0 blasting)."""

    def __init__(self) -> None:
        super().__init__()
        self.writable = asyncio.Event()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()


async def _client(host: str, port: int, client_id: str, kind: type[Conn] = Conn) -> Any:
    _, conn = await asyncio.get_running_loop().create_connection(kind, host, port)
    conn.send(Connect("MQTT", kind.level, client_id, True, 60))
    connack = await conn.expect(ConnAck)
    assert isinstance(connack, ConnAck) and (connack.session_present, connack.reason_code) == (
        False, 0), connack
    return conn


async def _subscriber(host: str, port: int, client_id: str, topic_filter: str, qos: int,
                      expected: int, kind: type[Conn] = Conn) -> Conn:
    conn: Conn = await _client(host, port, client_id, kind)
    conn.send(Subscribe(1, (Subscription(topic_filter, qos),)))
    await conn.expect(SubAck)
    conn.expected = expected
    return conn


async def _publish_qos1(conn: Conn, index: int, topic: str, messages: int, window: int) -> int:
    """Send ``messages`` keeping at most ``window`` unacknowledged; the count acknowledged."""
    sent = acked = 0
    while acked < messages:
        burst = []
        while sent < messages and sent - acked < window:
            burst.append(Publish(topic, f"{index}:{sent}".encode(), 1, packet_id=sent % 65535 + 1))
            sent += 1
        if burst:
            conn.send(*burst)
        await conn.expect(PubAck)
        acked += 1
    return acked


async def _publish_qos0(conn: Publisher, index: int, topic: str, messages: int) -> int:
    """Send ``messages`` as fast as the socket takes them; the count sent."""
    assert conn.transport is not None
    for start in range(0, messages, 100):
        await conn.writable.wait()
        conn.transport.write(b"".join(encode(Publish(topic, f"{index}:{n}".encode()), LEVEL)
                                      for n in range(start, min(start + 100, messages))))
    return messages


def _lost(received: list[tuple[str, bytes, int, bool]], sent: dict[int, int]) -> tuple[int, int]:
    """(messages published and never received, duplicates received)."""
    seen: set[bytes] = set()
    duplicates = 0
    for _, payload, _, _ in received:
        if payload in seen:
            duplicates += 1
        seen.add(payload)
    wanted = {f"{p}:{n}".encode() for p, count in sent.items() for n in range(count)}
    return len(wanted - seen), duplicates


async def _finish(subs: list[Conn], sent: dict[int, int], per_sub: list[dict[int, int]],
                  started: float, timeout: float) -> dict[str, Any]:
    published = time.monotonic()
    for sub in subs:
        try:
            await asyncio.wait_for(sub.complete.wait(), timeout)
        except asyncio.TimeoutError:
            pass  # counted as lost below
    done = time.monotonic()
    lost = duplicates = 0
    for sub, wanted in zip(subs, per_sub):
        sub_lost, sub_dup = _lost(sub.received, wanted)
        lost += sub_lost
        duplicates += sub_dup
    return {"published": sum(sent.values()), "received": sum(len(s.received) for s in subs),
            "lost": lost, "duplicates": duplicates,
            "seconds": {"publish": published - started, "deliver": done - started}}


async def pairs(host: str, port: int, count: int, qos: int, messages: int, window: int,
                timeout: float, ack_delay: float) -> dict[str, Any]:
    """See the module doc."""
    SlowSubscriber.ACK_DELAY = ack_delay
    subs = [await _subscriber(host, port, f"flow-s{i}", f"flow/{i}", qos, messages,
                              SlowSubscriber if ack_delay else Conn)
            for i in range(count)]
    pubs = [await _client(host, port, f"flow-p{i}", Publisher) for i in range(count)]
    started = time.monotonic()
    if qos:
        acked = await asyncio.gather(*(_publish_qos1(p, i, f"flow/{i}", messages, window)
                                       for i, p in enumerate(pubs)))
    else:
        acked = await asyncio.gather(*(_publish_qos0(p, i, f"flow/{i}", messages)
                                       for i, p in enumerate(pubs)))
    sent = dict(enumerate(acked))
    return await _finish(subs, sent, [{i: sent[i]} for i in range(count)], started, timeout)


async def fanin(host: str, port: int, count: int, messages: int, timeout: float
                ) -> dict[str, Any]:
    """See the module doc."""
    sub = await _subscriber(host, port, "fanin-s", "fanin/+", 0, count * messages)
    pubs = [await _client(host, port, f"fanin-p{i}", Publisher) for i in range(count)]
    started = time.monotonic()
    acked = await asyncio.gather(*(_publish_qos0(p, i, f"fanin/{i}", messages)
                                   for i, p in enumerate(pubs)))
    sent = dict(enumerate(acked))
    return await _finish([sub], sent, [sent], started, timeout)


async def shared(host: str, port: int, count: int, messages: int, timeout: float
                 ) -> dict[str, Any]:
    """See the module doc."""
    total = count * messages
    members = [await _subscriber(host, port, f"shared-s{i}", "$share/g/shared/+", 0, 0,
                                 Subscriber5) for i in range(2)]
    pubs = [await _client(host, port, f"shared-p{i}", Publisher) for i in range(count)]
    started = time.monotonic()
    acked = await asyncio.gather(*(_publish_qos0(p, i, f"shared/{i}", messages)
                                   for i, p in enumerate(pubs)))
    sent = dict(enumerate(acked))
    deadline = time.monotonic() + timeout
    while sum(len(m.received) for m in members) < total and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # polls the count the two members' reads build up
    merged = Conn()  # one view of what the group received, for _finish's count
    merged.received = [r for m in members for r in m.received]
    merged.complete.set()
    report = await _finish([merged], sent, [sent], started, 0)
    report["per_member"] = [len(m.received) for m in members]
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("pairs", "fanin", "shared"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=20, help="pairs, or fan-in publishers")
    parser.add_argument("--qos", type=int, default=1)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--ack-delay", type=float, default=0.0)
    args = parser.parse_args()
    import uvloop
    if args.mode == "pairs":
        result = uvloop.run(pairs(args.host, args.port, args.count, args.qos, args.messages,
                                  args.window, args.timeout, args.ack_delay))
    elif args.mode == "fanin":
        result = uvloop.run(fanin(args.host, args.port, args.count, args.messages, args.timeout))
    else:
        result = uvloop.run(shared(args.host, args.port, args.count, args.messages,
                                   args.timeout))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
