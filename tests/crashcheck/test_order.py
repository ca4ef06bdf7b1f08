"""The crash checker's order check against a publisher's resends (seed 1093449900).

Seed 1093449900 (power loss) failed about one run in three with "backlog:
pub0's message 100 delivered after 114 (order)". The commit log showed no
broker fault: pub0 (QoS 1) had 99..115 stored when the broker was stopped,
without their PUBACKs, and sent them all again after reconnecting, stored
as new ``PublishAccepted`` records; for ``backlog`` (queue limit 55) the broker
dropped the first 99..102 (queue_full, ``SessionDropped`` written),
delivered the first 103..115, then the resent 99..115. That is the order
the broker received them in ([MQTT-4.6.0-6]); the check took the payload
order for the sending order. These drive the real :class:`Publisher`
(its sends and its resend on reconnect) and the real check.
"""

from __future__ import annotations

import threading

from actorbroker.codec import Packet, Publish
from tests.crashcheck.client import Connection
from tests.crashcheck.model import check
from tests.crashcheck.publisher import Publisher, Sent
from tests.crashcheck.scenario import PublisherSpec, SubscriberSpec
from tests.crashcheck.subscriber import Delivery, Subscriber

PUB = PublisherSpec(cid="pub0", level=5, expiry=3600, keepalive=0, will_qos=0,
                    ends=("disconnect",), spell=(1.0, 1.0), offline=(0.1, 0.1), clean_p=0.0,
                    topic="t/b", qos=1, window=20, count=8)
SUB = SubscriberSpec(cid="backlog", level=4, expiry=3600, keepalive=0, will_qos=0,
                     ends=("disconnect",), spell=(1.0, 1.0), offline=(0.1, 0.1), clean_p=0.0,
                     filters=(("t/#", 1),))


class Wire(Connection):
    """A connection that keeps what it was sent (no broker: what is checked is the
    publisher's record of its sends and the check over it)."""

    def __init__(self) -> None:  # no socket
        self.packets: list[Packet] = []

    def send(self, *packets: Packet) -> None:
        self.packets.extend(packets)


def publisher(count: int, acked: int) -> tuple[Publisher, Wire]:
    """pub0 after sending ``count`` messages, the first ``acked`` acknowledged, then
    reconnecting to its session (it resends the rest)."""
    pub = Publisher(PUB, 1, 0, threading.Condition())
    first = Wire()
    for seq in range(count):
        message = Sent(seq, f"pub0|{seq}|".encode(), 0.0)
        pub.messages.append(message)
        pub._publish(first, message)  # noqa: SLF001 - the publisher's own send path
    for packet_id in range(1, acked + 1):
        pub.messages[packet_id - 1].acked = 1.0
        pub._done(packet_id)  # noqa: SLF001
    again = Wire()
    pub.connected(again, True)
    for message in pub.messages[acked:]:
        message.acked = 2.0  # the resends were acknowledged
    return pub, again


def subscriber(seqs: list[int]) -> Subscriber:
    sub = Subscriber(SUB, 1, 0, threading.Condition())
    sub.epoch = 1
    sub.subscribed_at[1] = -1.0
    sub.granted[1] = (1,)
    sub.deliveries = [Delivery(f"pub0|{s}|".encode(), "t/b", 1, 0.0, 1) for s in seqs]
    return sub


def order_violations(pub: Publisher, seqs: list[int]) -> list[str]:
    verdict = check([pub], [subscriber(seqs)], "", {})
    return [v for v in verdict.violations if v.endswith("(order)")]


def test_publisher_records_its_resends() -> None:
    pub, again = publisher(8, 2)
    assert pub.sends == [0, 1, 2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7]
    assert [p.payload for p in again.packets if isinstance(p, Publish)] == [
        f"pub0|{s}|".encode() for s in range(2, 8)]


def test_a_dropped_first_copy_resent_after_newer_ones_is_in_order() -> None:
    # The seed's shape: 2, 3 dropped, 4..7 delivered, then the resent 2..7.
    pub, _ = publisher(8, 2)
    assert order_violations(pub, [0, 1, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7]) == []


def test_out_of_order_within_one_connection_is_found() -> None:
    pub, _ = publisher(8, 8)  # all acknowledged: nothing resent
    assert order_violations(pub, [0, 1, 3, 2, 4]) == [
        "backlog: pub0's message 2 delivered after 3 (order)"]


def test_a_message_not_resent_may_not_come_after_newer_ones() -> None:
    pub, _ = publisher(8, 4)  # 4..7 resent, 2 and 3 not
    assert order_violations(pub, [0, 1, 3, 2]) == [
        "backlog: pub0's message 2 delivered after 3 (order)"]
    # Resent copies are in order among themselves too: 5 then 4, both from the resends.
    assert order_violations(pub, [0, 1, 2, 3, 6, 7, 5, 4]) == [
        "backlog: pub0's message 4 delivered after 5 (order)"]
