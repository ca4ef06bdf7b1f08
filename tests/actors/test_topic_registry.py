"""TopicActor and RegistryActor: creation, ordering, idle stop, crash recovery, the port."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from actors_testkit import FakeConnection, Harness, eventually
from pykka import ActorDeadError

from actorbroker.actors import ConnectionPort
from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription

Run = Callable[..., Any]


async def _subscribe(conn: FakeConnection, topic_filter: str, qos: int = 0) -> None:
    before = len(conn.of_type(SubAck))
    conn.feed(Subscribe(1, (Subscription(topic_filter, qos),)))
    await conn.expect(SubAck, before + 1)


def test_the_first_publishes_create_the_topic_actor_and_keep_their_order(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            await _subscribe(sub, "t/+")
            pub = await h.connect("p")
            assert "t/1" not in h.node.names.topics
            pub.feed(*[Publish("t/1", str(i).encode(), 1, packet_id=i) for i in range(1, 4)])
            pub.feed(*[Publish("t/1", str(i).encode(), 1, packet_id=i) for i in range(4, 7)])
            got = await sub.expect(Publish, 6)
            assert [p.payload for p in got] == [str(i).encode() for i in range(1, 7)]
            assert "t/1" in h.node.names.topics  # named by the registry
            session = h.node.names.sessions["p"]
            assert await session.proxy().via_registry == {}  # every Routed came back
    run(main())


def test_a_subscription_reaches_running_topic_actors_before_the_suback(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            pub = await h.connect("p")
            pub.feed(Publish("live/a", b"creates the actor", 1, packet_id=1))
            await pub.expect(PubAck)
            await eventually(lambda: "live/a" in h.node.names.topics)
            sub = await h.connect("s")
            await _subscribe(sub, "live/#", 2)  # after this SUBACK...
            pub.feed(Publish("live/a", b"seen", 2, packet_id=2))  # ...this is delivered
            [message] = await sub.expect(Publish)
            assert (message.payload, message.qos) == (b"seen", 2)
    run(main())


def test_an_idle_topic_actor_stops_and_comes_back(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_idle=0.05) as h:
            pub = await h.connect("p")
            pub.feed(Publish("lonely", b"nobody listens", 0))
            ref = await eventually(lambda: h.node.names.topics.get("lonely"))
            await eventually(lambda: not ref.is_alive())
            assert "lonely" not in h.node.names.topics
            assert h.node.metrics.topics == 0
            sub = await h.connect("s")
            await _subscribe(sub, "lonely")
            pub.feed(Publish("lonely", b"now someone does", 0))
            [message] = await sub.expect(Publish)
            assert message.payload == b"now someone does"
    run(main())


def test_topic_actors_with_subscribers_or_retained_do_not_stop(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_idle=0.02) as h:
            sub = await h.connect("s")
            await _subscribe(sub, "busy")
            pub = await h.connect("p")
            pub.feed(Publish("busy", b"1", 0), Publish("kept", b"r", 0, retain=True))
            await sub.expect(Publish)
            busy = await eventually(lambda: h.node.names.topics.get("busy"))
            kept = await eventually(lambda: h.node.names.topics.get("kept"))
            pub.feed(Publish("gone", b"x", 0))
            gone = await eventually(lambda: h.node.names.topics.get("gone"))
            await eventually(lambda: not gone.is_alive())  # several idle periods passed
            assert busy.is_alive() and kept.is_alive()
    run(main())


def test_a_crashed_topic_actor_is_replaced_with_its_subscribers_and_retained(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            await _subscribe(sub, "fragile", 1)
            pub = await h.connect("p")
            pub.feed(Publish("fragile", b"kept", 1, retain=True, packet_id=1))
            await sub.expect(Publish)
            ref = h.node.names.topics["fragile"]
            ref.tell("not a message")  # crash: a temporary child, never restarted
            await eventually(lambda: "fragile" not in h.node.names.topics)
            pub.feed(Publish("fragile", b"after", 1, packet_id=2))
            [_, after] = await sub.expect(Publish, 2)
            assert after.payload == b"after"
            new = h.node.names.topics["fragile"]
            assert new is not ref
            assert (await new.proxy().retained).payload == b"kept"
            assert await new.proxy().subscribers == {"s": 1}
    run(main())


def test_registry_keeps_one_copy_per_client_at_the_highest_qos(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            sub.feed(Subscribe(1, (Subscription("x/#", 0), Subscription("x/+", 1),
                                   Subscription("x/y", 2))))
            await sub.expect(SubAck)
            pub = await h.connect("p")
            pub.feed(Publish("x/y", b"m", 2, packet_id=1))
            await sub.expect(Publish)
            topic = h.node.names.topics["x/y"]
            assert await topic.proxy().subscribers == {"s": 2}
            registry = h.node.refs.registry
            assert await registry.proxy().subscriptions_of("s") == {"x/#": 0, "x/+": 1, "x/y": 2}
            sub.feed(Subscribe(2, (Subscription("x/y", 0),)))  # downgrade one of them
            await sub.expect(SubAck, 2)
            assert await topic.proxy().subscribers == {"s": 1}
    run(main())


class _Recorder:
    def __init__(self, dead: bool = False) -> None:
        self.told: list[Any] = []
        self.dead = dead

    def tell(self, message: Any) -> None:
        if self.dead:
            raise ActorDeadError("gone")
        self.told.append(message)


def test_connection_port_holds_then_forwards_in_order() -> None:
    port = ConnectionPort()
    port.tell("a")
    port.tell("b")
    dead = _Recorder(dead=True)
    with pytest.raises(ActorDeadError):
        port.bind(dead)
    assert port.target is None  # still holding
    port.tell("c")
    live = _Recorder()
    port.bind(live)
    port.tell("d")
    assert live.told == ["a", "b", "c", "d"]
    assert port.take_held() == []
    port.tell("dropped")
    assert live.told == ["a", "b", "c", "d"]
