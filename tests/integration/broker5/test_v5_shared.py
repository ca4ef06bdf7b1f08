"""Shared subscriptions: one member per message, strategies, and redelivery when a member goes away."""

from __future__ import annotations

from collections.abc import Callable

from mqtt5_testkit import Client5, connect5
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    PingReq,
    PingResp,
    PubAck,
    Publish,
    PubRec,
    SubAck,
    Subscribe,
    Subscription,
)
from actorbroker.config import Config

Clients5 = Callable[..., Client5]
Raw = Callable[..., RawClient]
Start = Callable[..., RunningBroker]


def payloads(messages: list[object]) -> list[bytes]:
    return [m.payload for m in messages]  # type: ignore[attr-defined]


def raw_member(raw: RawClient, client_id: str, group: str, qos: int = 1, *,
               clean: bool = True, **props: object) -> RawClient:
    connack = connect5(raw, client_id, clean=clean, session_expiry_interval=300, **props)
    assert isinstance(connack, ConnAck) and connack.reason_code == 0
    raw.send(Subscribe(1, (Subscription(group, qos),)))
    assert raw.recv() == SubAck(1, (qos,))
    return raw


def test_round_robin_gives_each_message_to_one_member(client5: Clients5) -> None:
    a, b = client5("a"), client5("b")
    a.subscribe("$share/g/jobs/+", 1)
    b.subscribe("$share/g/jobs/+", 1)
    pub = client5("p")
    for n in range(6):
        pub.publish("jobs/x", str(n).encode(), 1)
    got_a, got_b = a.expect_many(3), b.expect_many(3)
    assert sorted(payloads(got_a) + payloads(got_b)) == [str(n).encode() for n in range(6)]
    pub.publish("jobs/x", b"m1", 1)
    pub.publish("jobs/x", b"m2", 1)  # in turn: one each, so neither had a fourth
    assert len({a.expect().payload, b.expect().payload}) == 2


def test_groups_are_independent_and_non_shared_subscribers_get_their_copy(
        client5: Clients5) -> None:
    g1, g2, plain = client5("g1"), client5("g2"), client5("plain")
    g1.subscribe("$share/one/t", 1)
    g2.subscribe("$share/two/t", 1)
    plain.subscribe("t", 1)
    plain.subscribe("$share/one/t", 1)  # also a member of group one
    client5("p").publish("t", b"x", 1)
    assert g2.expect().payload == b"x"
    got = [plain.expect()]
    try:
        got.append(plain.expect(timeout=0.5))
    except TimeoutError:
        got.append(g1.expect())
    assert payloads(got) == [b"x", b"x"]  # group one delivered once, to g1 or to plain


def test_hash_of_the_publisher_keeps_its_messages_on_one_member(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(mqtt5={"shared_subscription_strategy": "hash_clientid"}))
    members = [client5(f"m{i}", target=running) for i in range(3)]
    for member in members:
        member.subscribe("$share/h/s", 1)
    pub = client5("publisher-1", target=running)
    for n in range(6):
        pub.publish("s", str(n).encode(), 1)
    pub.publish("s", b"end", 1)
    for member in members:
        try:
            got = [member.expect(timeout=0.5)]
        except TimeoutError:
            continue
        got += member.expect_many(6)
        assert payloads(got) == [str(n).encode() for n in range(6)] + [b"end"]
        return
    raise AssertionError("no member got the messages")


def test_random_strategy_delivers_each_message_once(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(mqtt5={"shared_subscription_strategy": "random"}))
    a, b = client5("a", target=running), client5("b", target=running)
    a.subscribe("$share/r/t", 1)
    b.subscribe("$share/r/t", 1)
    pub = client5("p", target=running)
    for n in range(20):
        pub.publish("t", str(n).encode(), 1)
    received: list[bytes] = []
    for member in (a, b):
        while True:
            try:
                received.append(member.expect(timeout=0.5).payload)
            except TimeoutError:
                break
    assert sorted(received) == sorted(str(n).encode() for n in range(20))


def test_qos1_in_flight_to_a_member_that_drops_goes_to_another(raw5: Raw,
                                                               client5: Clients5) -> None:
    a = raw_member(raw5(), "a", "$share/w/work")
    b = client5("b")
    b.subscribe("$share/w/work", 1)
    client5("p").publish("work", b"job", 1)
    first = a.recv()  # round robin starts with the member that joined first
    assert isinstance(first, Publish) and first.payload == b"job"
    a.close()  # no PUBACK, no DISCONNECT
    assert b.expect().payload == b"job"  # redelivered to the other member
    back = raw5()
    connack = connect5(back, "a", clean=False, session_expiry_interval=300)
    assert isinstance(connack, ConnAck) and connack.session_present
    back.send(PingReq())
    assert back.recv() == PingResp()  # nothing resent: the group has it elsewhere


def test_queued_messages_of_a_member_that_drops_go_to_another(raw5: Raw,
                                                              client5: Clients5) -> None:
    a = raw_member(raw5(), "a", "$share/w/q", receive_maximum=1)
    pub = client5("p")
    pub.publish("q", b"1", 1)
    pub.publish("q", b"2", 1)  # A is the only member: in flight and queued there
    assert a.recv().payload == b"1"  # type: ignore[union-attr]
    b = client5("b")
    b.subscribe("$share/w/q", 1)
    a.close()
    assert sorted(payloads(b.expect_many(2))) == [b"1", b"2"]


def test_an_acknowledged_message_is_never_sent_to_another_member(raw5: Raw,
                                                                client5: Clients5) -> None:
    a = raw_member(raw5(), "a", "$share/w/ack")
    b = client5("b")
    b.subscribe("$share/w/ack", 1)
    pub = client5("p")
    pub.publish("ack", b"done", 1)
    got = a.recv()
    assert isinstance(got, Publish)
    a.send(PubAck(got.packet_id or 0), PingReq())
    assert a.recv() == PingResp()  # the PUBACK was handled
    a.close()
    pub.publish("ack", b"marker", 1)  # A is gone: B, the only one online, gets it
    assert b.expect().payload == b"marker"  # and not "done" first


def test_qos2_in_flight_stays_with_its_member(raw5: Raw, client5: Clients5) -> None:
    a = raw_member(raw5(), "a", "$share/w/two", 2)
    b = client5("b")
    b.subscribe("$share/w/two", 2)
    pub = client5("p")
    pub.publish("two", b"exactly-once", 2)
    got = a.recv()
    assert isinstance(got, Publish) and got.qos == 2
    a.close()  # no PUBREC: [MQTT-4.8.2-4] the delivery is completed with A
    pub.publish("two", b"marker", 2)
    assert b.expect().payload == b"marker"
    back = raw5()
    connect5(back, "a", clean=False, session_expiry_interval=300)
    again = back.recv()
    assert isinstance(again, Publish) and (again.payload, again.dup) == (b"exactly-once", True)
    back.send(PubRec(again.packet_id or 0))


def test_with_no_member_online_a_persistent_member_queues(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(storage={"durability": "memory"}))  # sessions stay in memory
    a = client5("a", connect=False, target=running)
    a.connect(SessionExpiryInterval=300)
    a.subscribe("$share/off/t", 1)
    a.disconnect()
    client5("p", target=running).publish("t", b"waiting", 1)
    back = client5("a", connect=False, target=running)
    assert back.connect(clean_start=False, SessionExpiryInterval=300).session_present
    assert back.expect().payload == b"waiting"


def test_a_v3_share_filter_stays_a_plain_filter(client: Callable[..., Client],
                                                client5: Clients5) -> None:
    v3 = client("v3")
    v3.subscribe("$share/g/t", 1)
    pub = client5("p")
    pub.publish("t", b"not for v3", 1)
    pub.publish("$share/g/t", b"literal", 1)
    assert v3.expect().payload == b"literal"
