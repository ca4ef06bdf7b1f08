"""SessionCore with an ACL (a Grants object) and the $SYS rule: no threads, no loop."""

from __future__ import annotations

import pytest

from actorbroker.auth import AclFile
from actorbroker.codec import (
    Connect,
    PubAck,
    PubRec,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
)
from actorbroker.session import (
    RequestSubscribe,
    RevokeSubscriptions,
    Route,
    Send,
    SessionConfig,
    SessionCore,
    SubscriptionLimits,
    is_sys,
)

ACL = AclFile.parse("topic readwrite ok/#\ntopic read ro/#\ntopic deny ok/no\n")


def attached(level: int = 4, acl: AclFile | None = ACL) -> SessionCore:
    core = SessionCore("c")
    core.attach(Connect("MQIsdp" if level == 3 else "MQTT", level, "c", False, 0), 0.0)
    assert core.authorize(None if acl is None else acl.for_client(None, "c")) == []
    return core


@pytest.mark.parametrize("level", [3, 4, 5])
def test_publish_refused_by_the_acl(level: int) -> None:
    core = attached(level)
    refused = ReasonCode.NOT_AUTHORIZED if level == 5 else 0
    assert core.handle(Publish("ro/x", b"", 0), 1.0) == []
    assert core.handle(Publish("ro/x", b"", 1, packet_id=1), 1.0) == [
        Send((PubAck(1, refused),))]
    assert core.handle(Publish("ok/no", b"", 2, packet_id=2), 1.0) == [
        Send((PubRec(2, refused),))]
    routed = core.handle(Publish("ok/yes", b"", 1, packet_id=3), 1.0)
    assert [type(e) for e in routed] == [Route]


@pytest.mark.parametrize("acl", [ACL, None])
@pytest.mark.parametrize("topic", ["$SYS", "$SYS/broker/evil"])
def test_sys_is_never_published_to(acl: AclFile | None, topic: str) -> None:
    core = attached(5, acl)
    assert core.handle(Publish(topic, b"", 1, packet_id=1, retain=True), 1.0) == [
        Send((PubAck(1, ReasonCode.NOT_AUTHORIZED),))]
    assert is_sys(topic) and not is_sys("$SYSTEM") and not is_sys("sys/$SYS")


@pytest.mark.parametrize("level, failure", [(3, 0x80), (4, 0x80), (5, ReasonCode.NOT_AUTHORIZED)])
def test_subscribe_refused_per_filter(level: int, failure: int) -> None:
    core = attached(level)
    effects = core.handle(Subscribe(1, (Subscription("ok/#", 1), Subscription("ro/+", 1),
                                        Subscription("ok/yes", 1), Subscription("#", 0))), 1.0)
    assert effects == [RequestSubscribe(1, (Subscription("ro/+", 1), Subscription("ok/yes", 1)))]
    assert core.subscribed(1, None, (), 2.0)[0] == Send((SubAck(1, (failure, 1, 1, failure)),))


def test_a_new_acl_revokes_what_it_no_longer_grants() -> None:
    core = attached(4)
    core.handle(Subscribe(1, (Subscription("ro/a", 0), Subscription("ok/b", 0))), 1.0)
    core.subscribed(1, None, (), 1.0)
    narrower = AclFile.parse("topic readwrite ok/#\n").for_client(None, "c")
    assert core.authorize(narrower) == [RevokeSubscriptions(("ro/a",))]
    assert list(core.subscriptions) == ["ok/b"]
    assert core.authorize(None) == []  # no ACL: nothing is checked, nothing revoked


@pytest.mark.parametrize("level", [4, 5])
def test_published_topics_longer_or_deeper_than_the_limits_are_not_routed(level: int) -> None:
    limits = SubscriptionLimits(max_filter_length=12, max_filter_levels=3)
    core = SessionCore("c", SessionConfig(subscription_limits=limits))
    core.attach(Connect("MQTT", level, "c", False, 0), 0.0)
    refused = ReasonCode.TOPIC_NAME_INVALID if level == 5 else 0
    assert core.handle(Publish("a/b/c/d", b"", 1, packet_id=1), 1.0) == [
        Send((PubAck(1, refused),))]
    assert core.handle(Publish("a" * 13, b"", 2, packet_id=2), 1.0) == [
        Send((PubRec(2, refused),))]
    assert core.handle(Publish("a/b/c/d", b"", 0), 1.0) == []
    for topic in ("a/b/c", "a" * 12):  # at the limits: routed
        routed = core.handle(Publish(topic, b"", 1, packet_id=3), 1.0)
        assert [type(e) for e in routed] == [Route]
