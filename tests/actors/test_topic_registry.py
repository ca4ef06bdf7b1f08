"""TopicActor and RegistryActor: cold and hot topics, ordering, idle stop, crash recovery, the port."""

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


def test_a_cold_topic_is_routed_by_the_registry_and_a_hot_one_gets_an_actor_in_order(
        run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            await _subscribe(sub, "t/+")
            pub = await h.connect("p")
            pub.feed(*[Publish("t/1", str(i).encode(), 1, packet_id=i) for i in range(1, 4)])
            await sub.expect(Publish, 3)
            assert "t/1" not in h.node.names.topics  # cold: the registry delivered it
            assert h.node.metrics.topics == 0
            pub.feed(*[Publish("t/1", str(i).encode(), 1, packet_id=i) for i in range(4, 7)])
            await sub.expect(Publish, 6)
            await eventually(lambda: "t/1" in h.node.names.topics)  # hot: named by the registry
            pub.feed(*[Publish("t/1", str(i).encode(), 1, packet_id=i) for i in range(7, 10)])
            got = await sub.expect(Publish, 9)
            assert [p.payload for p in got] == [str(i).encode() for i in range(1, 10)]
            session = h.node.names.sessions["p"]
            assert await session.proxy().via_registry == {}  # every Routed came back
    run(main())


def test_topics_published_once_cost_no_actor(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            await _subscribe(sub, "many/#")
            pub = await h.connect("p")
            pub.feed(*[Publish(f"many/{i}", b"x", 0) for i in range(500)])
            got = await sub.expect(Publish, 500)
            assert sorted(p.topic for p in got) == sorted(f"many/{i}" for i in range(500))
            assert h.node.metrics.topics == 0
            assert await h.node.names.registry().proxy().live_topics() == []
    run(main())


def test_with_no_hot_window_every_topic_gets_an_actor(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_hot_window=0) as h:
            pub = await h.connect("p")
            pub.feed(Publish("once", b"x", 1, packet_id=1))
            await pub.expect(PubAck)
            await eventually(lambda: "once" in h.node.names.topics)
    run(main())


def test_a_subscription_reaches_running_topic_actors_before_the_suback(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_hot_window=0) as h:
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


def test_an_idle_topic_actor_stops_and_comes_back_with_its_subscribers(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_idle=0.05, topic_hot_window=0) as h:
            sub = await h.connect("s")
            await _subscribe(sub, "quiet")
            pub = await h.connect("p")
            pub.feed(Publish("quiet", b"1", 0), Publish("kept", b"r", 0, retain=True))
            await sub.expect(Publish)
            ref = await eventually(lambda: h.node.names.topics.get("quiet"))
            kept = await eventually(lambda: h.node.names.topics.get("kept"))
            await eventually(lambda: not ref.is_alive() and not kept.is_alive())
            assert "quiet" not in h.node.names.topics
            assert h.node.metrics.topics == 0
            pub.feed(Publish("quiet", b"2", 0))  # a new actor, with the trie's subscribers
            [_, message] = await sub.expect(Publish, 2)
            assert message.payload == b"2"
            late = await h.connect("late")
            await _subscribe(late, "kept")  # the registry kept the retained message
            [retained] = await late.expect(Publish)
            assert (retained.payload, retained.retain) == (b"r", True)
    run(main())


def test_a_crashed_topic_actor_is_replaced_with_its_subscribers(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_hot_window=0) as h:
            sub = await h.connect("s")
            await _subscribe(sub, "fragile", 1)
            pub = await h.connect("p")
            pub.feed(Publish("fragile", b"kept", 1, retain=True, packet_id=1))
            await sub.expect(Publish)
            ref = await eventually(lambda: h.node.names.topics.get("fragile"))
            ref.tell("not a message")  # crash: a temporary child, never restarted
            await eventually(lambda: "fragile" not in h.node.names.topics)
            pub.feed(Publish("fragile", b"after", 1, packet_id=2))
            [_, after] = await sub.expect(Publish, 2)
            assert after.payload == b"after"
            new = h.node.names.topics["fragile"]
            assert new is not ref
            assert await new.proxy().subscribers == {"s": 1}
            registry = h.node.names.registry().proxy()
            assert (await registry.retained_message("fragile")).payload == b"kept"
    run(main())


def test_registry_keeps_one_copy_per_client_at_the_highest_qos(run: Run) -> None:
    async def main() -> None:
        async with Harness(topic_hot_window=0) as h:
            sub = await h.connect("s")
            sub.feed(Subscribe(1, (Subscription("x/#", 0), Subscription("x/+", 1),
                                   Subscription("x/y", 2))))
            await sub.expect(SubAck)
            pub = await h.connect("p")
            pub.feed(Publish("x/y", b"m", 2, packet_id=1))
            await sub.expect(Publish)
            topic = h.node.names.topics["x/y"]
            assert await topic.proxy().subscribers == {"s": 2}
            registry = h.node.names.registry()
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
