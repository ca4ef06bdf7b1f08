"""RegistryActor's sliced subscription work keeps the order the broker relies on.

A SUBSCRIBE of 1,000 filters is applied 256 per turn; meanwhile a second
client's publishes are routed, while the subscriber's own later requests
(its UNSUBSCRIBE, its publishes, a new session's question) wait their turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors_testkit import Harness

from actorbroker.codec import Publish, SubAck, Subscribe, Subscription, UnsubAck, Unsubscribe

Run = Callable[..., Any]
FILTERS = tuple(Subscription(f"big/{i}", 0) for i in range(999)) + (Subscription("own/t", 0),)


def test_a_big_subscribe_then_its_sessions_requests_stay_in_order(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            sub = await h.connect("s")
            # One read: the SUBSCRIBE, a publish to a filter of it, the UNSUBSCRIBE of all.
            sub.feed(Subscribe(1, FILTERS), Publish("own/t", b"mine", 0),
                     Unsubscribe(2, tuple(f.topic_filter for f in FILTERS)))
            suback = (await sub.expect(SubAck, 1))[0]
            assert suback.reason_codes == (0,) * 1000
            await sub.expect(UnsubAck, 1)
            # The publish came after the SUBSCRIBE: it found the subscription.
            assert [p.payload for p in sub.of_type(Publish)] == [b"mine"]
            registry = h.node.names.registry()
            assert await registry.proxy().subscription_count == 0  # the UNSUBSCRIBE came last
    run(main())


def test_other_clients_are_routed_while_a_big_subscribe_is_applied(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            watcher = await h.connect("w")
            watcher.feed(Subscribe(1, (Subscription("news", 0),)))
            await watcher.expect(SubAck, 1)
            storm = await h.connect("s")
            pub = await h.connect("p")
            storm.feed(*[Subscribe(n, tuple(Subscription(f"s/{n}/{i}", 0) for i in range(1000)))
                         for n in range(1, 9)])
            pub.feed(Publish("news", b"1", 0))
            await watcher.expect(Publish, 1)
            # The publish overtook the storm: not all of its 8,000 filters were applied yet.
            assert len(storm.of_type(SubAck)) < 8
            await storm.expect(SubAck, 8)
            assert await h.node.names.registry().proxy().subscription_count == 8001
    run(main())


def test_a_big_unsubscribe_and_a_session_end_are_sliced_in_order(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            watcher = await h.connect("w")
            watcher.feed(Subscribe(1, (Subscription("news", 0),)))
            await watcher.expect(SubAck, 1)
            big = await h.connect("b")
            filters = tuple(f"b/{i}" for i in range(1000))
            big.feed(Subscribe(1, tuple(Subscription(f, 0) for f in filters)))
            await big.expect(SubAck, 1)
            pub = await h.connect("p")
            # The UNSUBSCRIBE of 1,000 filters, then a SUBSCRIBE: applied in that order.
            big.feed(Unsubscribe(2, filters), Subscribe(3, (Subscription("b/0", 0),)))
            pub.feed(Publish("news", b"1", 0))
            await watcher.expect(Publish, 1)
            await big.expect(SubAck, 2)
            registry = h.node.names.registry().proxy()
            assert await registry.subscriptions_of("b") == {"b/0": 0}
            assert await registry.subscription_count == 2
    run(main())
