"""SessionActor's fan-out path: live QoS 0 deliveries, one message to many sessions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors_testkit import FakeConnection, Harness

from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription

Run = Callable[..., Any]


async def _subscribe(conn: FakeConnection, topic_filter: str, qos: int) -> None:
    conn.feed(Subscribe(1, (Subscription(topic_filter, qos),)))
    await conn.expect(SubAck)


def test_one_message_reaches_every_subscriber_as_one_shared_publish(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            subs = [await h.connect(f"s{i}") for i in range(4)]
            for i, conn in enumerate(subs):
                await _subscribe(conn, ("f/+", "f/#", "f/x", "+/x")[i], i % 3)
            pub = await h.connect("p")
            sent_before = h.node.metrics.publish_sent
            pub.feed(Publish("f/x", b"one", 0, True), Publish("f/x", b"two", 1, packet_id=5))
            await pub.expect(PubAck)
            got = [await conn.expect(Publish, 2) for conn in subs]
            assert [[(p.payload, p.qos, p.retain) for p in g] for g in got] == [
                [(b"one", 0, False), (b"two", min(1, i % 3), False)] for i in range(4)
            ]  # live forwarding: RETAIN 0 ([MQTT-3.3.1-9]); QoS the lower of the two
            first = got[0][0]
            assert all(g[0] is first for g in got)  # built once for all four sessions
            assert h.node.metrics.publish_sent - sent_before == 8
    run(main())


def test_qos0_to_a_client_with_flows_in_flight_keeps_order(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            await _subscribe(sub, "o/#", 1)
            pub = await h.connect("p")
            pub.feed(*[Publish(f"o/{i}", str(i).encode(), i % 2, packet_id=i if i % 2 else None)
                       for i in range(1, 21)])
            got = await sub.expect(Publish, 20)
            assert [p.payload for p in got] == [str(i).encode() for i in range(1, 21)]
            session = h.node.names.sessions["s"]
            core = await session.proxy().core
            assert len(core.flying) == 10  # the QoS 1 ones, unacknowledged
    run(main())
