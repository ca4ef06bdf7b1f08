"""SessionActor and the gateway: attach, take-over, concurrent connects, retiring, crashes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors_testkit import FakeConnection, Harness, eventually
from pykka import ActorDeadError

from actorbroker.ports import Drained
from actorbroker.actors.messages import Deliver
from actorbroker.actors.names import Singleton
from actorbroker.session import AppMessage, QueuePolicy, SessionConfig
from actorbroker.codec import (
    ConnAck,
    Disconnect,
    PingReq,
    PingResp,
    Properties,
    PubAck,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    Will,
)
Run = Callable[..., Any]


class _Gone:
    """A ref whose actor has stopped: every tell raises, as pykka's does."""

    def tell(self, message: Any) -> None:
        raise ActorDeadError("stopped")


async def _subscribe(conn: FakeConnection, topic_filter: str, qos: int = 1) -> None:
    before = len(conn.of_type(SubAck))
    conn.feed(Subscribe(1, (Subscription(topic_filter, qos),)))
    await conn.expect(SubAck, before + 1)


def test_one_read_gives_one_send_and_one_batch_done(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            conn = await h.connect("reader")
            sends_before = len(conn.sent)
            conn.feed(PingReq(), PingReq(), Publish("a", b"x", 1, packet_id=3))
            await conn.expect(PubAck)
            assert conn.sent[sends_before:] == [PingResp(), PingResp(), PubAck(3)]
            assert conn.batches_done == 1
    run(main())


def test_concurrent_connects_of_one_client_id_start_one_session(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            first = h.attach("twin")   # the session starts asynchronously:
            second = h.attach("twin")  # this CONNECT joins that start
            assert first.port is not second.port
            await second.expect(ConnAck)
            await eventually(lambda: first.closed)  # taken over: [MQTT-3.1.4-2]
            assert first.of_type(ConnAck) == [ConnAck(False, 0)]
            assert "[MQTT-3.1.4-2]" in first.close_reason
            assert list(h.node.names.sessions) == ["twin"]
            await _subscribe(second, "t")  # the survivor works
            assert not second.closed
    run(main())


def test_a_retiring_session_hands_a_late_attach_to_its_successor(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            old = await h.connect("phoenix", clean=True)
            old_ref = h.node.names.sessions["phoenix"]
            old.drop()  # the clean session ends with it: the actor retires...
            new = h.attach("phoenix")  # ...but this Attach was already sent to it
            assert new.port.target is old_ref
            [connack] = await new.expect(ConnAck)
            assert connack == ConnAck(False, 0)
            await eventually(lambda: not old_ref.is_alive())
            assert h.node.names.sessions["phoenix"] is not old_ref
            assert new.port.target is h.node.names.sessions["phoenix"]
            await _subscribe(new, "ph/#")
            new.feed(Publish("ph/1", b"alive", 0))
            await new.expect(Publish)
            new.feed(Disconnect())
    run(main())


def test_a_crashed_persistent_session_is_restarted_with_its_subscriptions(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            conn = await h.connect("durable", clean=False)
            await _subscribe(conn, "d/#", 1)
            ref = h.node.names.sessions["durable"]
            ref.tell("not a message")  # a bug: the actor crashes
            await eventually(lambda: conn.closed)  # on_failure closes its connection
            await eventually(lambda: h.node.names.sessions.get("durable") not in (None, ref))
            back = h.attach("durable", clean=False)
            [connack] = await back.expect(ConnAck)
            assert connack == ConnAck(True, 0)  # the restored session resumes
            pub = await h.connect("pub")
            pub.feed(Publish("d/x", b"after the crash", 1, packet_id=1))
            [message] = await back.expect(Publish)
            assert message.payload == b"after the crash"
    run(main())


def test_a_crashed_clean_session_is_forgotten(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            conn = await h.connect("fleeting", clean=True)
            await _subscribe(conn, "f/#")
            assert h.node.metrics.subscriptions == 1
            ref = h.node.names.sessions["fleeting"]
            ref.tell("not a message")
            await eventually(lambda: conn.closed)
            await eventually(lambda: h.node.metrics.subscriptions == 0)
            await eventually(lambda: "fleeting" not in h.node.names.sessions)
    run(main())


def test_a_congested_connection_queues_until_drained(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            slow = await h.connect("slow")
            await _subscribe(slow, "c/t", 1)
            pub = await h.connect("fast")
            pub.feed(Publish("c/t", b"warm-up", 0))
            await slow.expect(Publish)
            slow.congested = True
            pub.feed(*[Publish("c/t", str(i).encode(), i % 2, packet_id=i if i % 2 else None)
                       for i in range(1, 201)])
            await pub.expect(PubAck, 100)
            session = h.node.names.sessions["slow"]
            core = await session.proxy().core
            await eventually(lambda: len(core.queued) == 200)  # QoS 0 waits too
            assert len(slow.of_type(Publish)) == 1
            slow.congested = False
            slow.port.tell(Drained(slow.conn_id))
            # FIFO, until the window (20 QoS 1 in flight) is full.
            got = await slow.expect(Publish, 1 + 39)
            assert [p.payload for p in got[1:]] == [str(i).encode() for i in range(1, 40)]
            acked = 0
            while len(slow.of_type(Publish)) < 201:  # acknowledge: the window moves on
                seen = slow.of_type(Publish)
                slow.feed(*[PubAck(p.packet_id) for p in seen[acked:] if p.qos])
                acked = len(seen)
                await slow.expect(Publish, acked + 1)
            assert [p.payload for p in slow.of_type(Publish)[1:]] == [
                str(i).encode() for i in range(1, 201)]
            assert h.node.metrics.dropped == {}
    run(main())


def test_a_congested_connection_holds_its_publisher_then_drops_beyond_the_queue_limit(
        run: Run) -> None:
    async def main() -> None:
        async with Harness(session=SessionConfig(queue=QueuePolicy(max_queued_messages=5)),
                           backpressure_timeout=0.2) as h:
            slow = await h.connect("slow")
            await _subscribe(slow, "c/t", 0)
            slow.congested = True
            pub = await h.connect("fast")
            done = pub.batches_done
            # One read's messages: queued beyond the limit, the publisher's credit held...
            pub.feed(*[Publish("c/t", b"x", 0) for _ in range(8)])
            stuck = await eventually(lambda: h.node.metrics.subscribers_stuck == 1 and
                                     (pub.batches_done, h.node.metrics.dropped))
            # ...until the subscriber was stuck for the timeout: then its credit is back,
            # nothing was dropped, and the limit applies to what comes next.
            assert stuck == (done + 1, {})
            pub.feed(*[Publish("c/t", b"y", 0) for _ in range(3)])
            await eventually(lambda: h.node.metrics.dropped == {"queue_full": 3})
            assert pub.batches_done == done + 2  # a stuck subscriber holds nobody
    run(main())


def test_an_offline_session_holds_no_publisher_and_keeps_its_queue_limit(run: Run) -> None:
    async def main() -> None:
        async with Harness(session=SessionConfig(queue=QueuePolicy(max_queued_messages=5))) as h:
            away = await h.connect("away", clean=False)
            await _subscribe(away, "o/t", 1)
            away.feed(Disconnect())
            await eventually(lambda: h.node.metrics.clients_connected == 0)
            pub = await h.connect("pub")
            done = pub.batches_done
            pub.feed(*[Publish("o/t", b"x", 1, packet_id=n + 1) for n in range(8)])
            await eventually(lambda: h.node.metrics.dropped == {"queue_full": 3})
            assert await eventually(lambda: pub.batches_done == done + 1)
    run(main())


def test_a_client_that_gets_what_it_publishes_is_not_held_by_its_own_queue(run: Run) -> None:
    async def main() -> None:
        async with Harness(session=SessionConfig(queue=QueuePolicy(max_queued_messages=5))) as h:
            echo = await h.connect("echo")
            await _subscribe(echo, "e/t", 0)
            echo.congested = True
            done = echo.batches_done
            # Its acknowledgements come through the socket its credit would pause: the
            # credit is back at once, and the queue keeps its limit.
            echo.feed(*[Publish("e/t", b"x", 0) for _ in range(8)])
            await eventually(lambda: h.node.metrics.dropped == {"queue_full": 3})
            assert await eventually(lambda: echo.batches_done == done + 1)
    run(main())


def test_a_clean_start_ignores_deliveries_for_the_discarded_subscriptions(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            old = await h.connect("epoch", clean=False)
            await _subscribe(old, "e/#", 1)
            ref = h.node.names.sessions["epoch"]
            old_epoch = await ref.proxy().epoch
            old.feed(Disconnect())
            await eventually(lambda: h.node.metrics.clients_connected == 0)
            new = await h.connect("epoch", clean=True)  # discards "e/#" (asynchronously)
            assert await ref.proxy().epoch != old_epoch
            # A Deliver the topic actor sent before the registry removed "e/#":
            ref.tell(Deliver((AppMessage("e/1", b"stale", 1),), 1, old_epoch))
            await _subscribe(new, "marker")
            h.node.names.sessions["epoch"].tell(
                Deliver((AppMessage("marker", b"m", 0),), 0, await ref.proxy().epoch))
            [message] = await new.expect(Publish)
            assert message.payload == b"m"
            assert h.node.metrics.dropped == {"session_ended": 1}
    run(main())


def test_a_session_that_cannot_start_refuses_with_server_unavailable(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            names = h.node.names
            sessions = names.whereis(Singleton.SESSIONS)
            # The supervisor of sessions is down: starting a session fails.
            names.register(Singleton.SESSIONS, _Gone())  # type: ignore[arg-type]
            try:
                conn = h.attach("unlucky")
                v5 = h.attach("unlucky5", level=5)
                await eventually(lambda: conn.closed and v5.closed)
                assert conn.sent == [ConnAck(False, 0x03)]
                # MQTT 5 has no 0x03: 0x88 Server unavailable, and why.
                assert v5.sent == [ConnAck(False, ReasonCode.SERVER_UNAVAILABLE, Properties(
                    reason_string="the session could not be started"))]
            finally:
                names.register(Singleton.SESSIONS, sessions)
    run(main())


def test_will_of_a_dropped_connection_goes_through_the_tree(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            watcher = await h.connect("watcher")
            await _subscribe(watcher, "w/+", 1)
            doomed = await h.connect("doomed", will=Will("w/doomed", b"bye", 1, False))
            doomed.drop()
            [will] = await watcher.expect(Publish)
            assert (will.topic, will.payload, will.qos) == ("w/doomed", b"bye", 1)
    run(main())
