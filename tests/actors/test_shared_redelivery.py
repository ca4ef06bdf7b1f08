"""The registry's redelivery of what a shared-group member hands back (actors/topics/registry.py).

A member that leaves hands back what it has not taken; when no other member
can take it right then (their sessions are between actors, or the broker is
stopping), the group still owes it: the next member session to start gets it.
It is never settled as undeliverable while the group has members (a SIGTERM
in that instant lost the message: crash checker seeds 518100640 and
1885426904 --power-loss).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors_testkit import FakeConnection, Harness, eventually

from actorbroker.actors.messages import RedeliverShared
from actorbroker.codec import Properties, PubAck, Publish, SubAck, Subscribe, Subscription
from actorbroker.session import AppMessage

Run = Callable[..., Any]
GROUP = "$share/g/work"


async def _member(h: Harness, client_id: str) -> FakeConnection:
    conn = h.attach(client_id, clean=False, level=5,
                    properties=Properties(session_expiry_interval=600))
    conn.feed(Subscribe(1, (Subscription(GROUP, 1),)))
    await conn.expect(SubAck)
    return conn


def test_a_handed_back_message_waits_for_a_member_that_comes_back(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            await _member(h, "m")
            # Its session lives on (expiry 600 s) without an actor.
            await h.node.names.sessions["m"].stop(block=False)
            await eventually(lambda: "m" not in h.node.names.sessions)
            message = AppMessage("work", b"owed", 1, publisher="p")
            h.node.names.registry().tell(RedeliverShared("gone", GROUP, (message,)))
            back = h.attach("m", clean=False, level=5,
                            properties=Properties(session_expiry_interval=600))
            [got] = await back.expect(Publish)
            assert (got.topic, got.payload, got.qos) == ("work", b"owed", 1)
            assert h.node.metrics.dropped.get("shared_unavailable", 0) == 0
    run(main())


def test_a_group_without_members_settles_what_it_owed_as_a_counted_drop(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            conn = await _member(h, "m")
            await h.node.names.sessions["m"].stop(block=False)
            await eventually(lambda: "m" not in h.node.names.sessions)
            message = AppMessage("work", b"owed", 1, publisher="p")
            h.node.names.registry().tell(RedeliverShared("gone", GROUP, (message,)))
            back = h.attach("m", clean=True, level=5)  # Clean Start: the membership ends
            await eventually(lambda: h.node.metrics.dropped.get("shared_unavailable", 0) == 1)
            assert not back.of_type(Publish) and not conn.of_type(Publish)
    run(main())


def test_a_publish_no_member_can_take_now_waits_for_one(run: Run) -> None:
    """The topic actor's first delivery: the only member's session is between actors
    when a QoS 1 message comes. It is owed, not dropped: the member gets it when its
    session starts again (a SIGTERM in that instant settled it as undeliverable and the
    restart lost it: seed 639277478 --power-loss). QoS 0 is dropped, counted."""
    async def main() -> None:
        async with Harness() as h:
            await _member(h, "m")
            await h.node.names.sessions["m"].stop(block=False)
            await eventually(lambda: "m" not in h.node.names.sessions)
            publisher = h.attach("p", level=5)
            publisher.feed(Publish("work", b"qos0", 0),
                           Publish("work", b"owed", 1, packet_id=1))
            await publisher.expect(PubAck)
            await eventually(lambda: h.node.metrics.dropped.get("shared_unavailable", 0) == 1)
            back = h.attach("m", clean=False, level=5,
                            properties=Properties(session_expiry_interval=600))
            [got] = await back.expect(Publish)
            assert (got.topic, got.payload, got.qos) == ("work", b"owed", 1)
            assert h.node.metrics.dropped.get("shared_unavailable", 0) == 1  # the QoS 0 one
    run(main())
