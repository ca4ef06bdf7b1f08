"""The registry starts topic actors without waiting: ports hold what it tells them, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors_testkit import Harness, eventually

from actorbroker.actors.topics.topic_table import HotTopics, TopicPort
from actorbroker.codec import Publish, SubAck, Subscribe, Subscription

Run = Callable[..., Any]


def test_many_new_topics_of_one_read_keep_their_order_per_topic(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            sub.feed(Subscribe(1, (Subscription("many/#", 0),)))
            await sub.expect(SubAck)
            pub = await h.connect("p")
            topics = [f"many/{i}" for i in range(40)]
            rounds = HotTopics.HOT_AFTER + 2  # the later rounds find ports, then actors
            for round_ in range(rounds):
                pub.feed(*[Publish(t, f"{round_}".encode(), 0) for t in topics])
            got = await sub.expect(Publish, 40 * rounds)
            for topic in topics:
                assert [p.payload for p in got if p.topic == topic] == [
                    f"{round_}".encode() for round_ in range(rounds)]
            await eventually(lambda: len(h.node.names.topics) == 40)
            registry = h.node.names.registry()
            assert sorted(await registry.proxy().live_topics()) == sorted(topics)
            assert h.node.metrics.topics == 40
    run(main())


def test_a_subscription_made_while_the_topic_actor_starts_reaches_it(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            pub = await h.connect("p")
            sub = await h.connect("s")
            # In one registry turn: the publishes that make the topic hot (the registry
            # starts the actor and a port stands for it), then the subscription (the port
            # holds the change).
            pub.feed(*[Publish("fresh", b"before", 0)] * HotTopics.HOT_AFTER)
            sub.feed(Subscribe(1, (Subscription("fresh", 0),)))
            assert "fresh" not in h.node.names.topics
            await sub.expect(SubAck)
            pub.feed(Publish("fresh", b"after", 0))
            [message] = await sub.expect(Publish)
            assert message.payload == b"after"  # routed before the subscription: not delivered
            topic = await eventually(lambda: h.node.names.topics.get("fresh"))
            assert await topic.proxy().subscribers == {"s": 0}
            assert not isinstance(topic, TopicPort)  # the name table holds refs only
            assert len(sub.of_type(Publish)) == 1
    run(main())
