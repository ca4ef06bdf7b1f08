"""The publish quota: a pure token bucket, and the session core closing with 0x97."""

from __future__ import annotations

import pytest

from actorbroker.codec import Connect, Disconnect, Properties, Publish, ReasonCode, Will
from actorbroker.session import (
    Close,
    Effect,
    PublishQuota,
    PublishWill,
    Route,
    Send,
    SessionConfig,
    SessionCore,
    TokenBucket,
)

# -- the token bucket ----------------------------------------------------------------


def test_unlimited_quota_always_grants() -> None:
    bucket = TokenBucket(PublishQuota())
    assert all(bucket.take(0.0) for _ in range(10_000))


def test_a_full_bucket_grants_the_burst_then_refuses() -> None:
    bucket = TokenBucket(PublishQuota(rate=5, burst=3), now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]


def test_the_bucket_refills_at_the_rate() -> None:
    bucket = TokenBucket(PublishQuota(rate=5, burst=5), now=0.0)
    assert all(bucket.take(0.0) for _ in range(5))
    assert not bucket.take(0.1)  # half a token back
    assert bucket.take(0.2)  # one token back
    assert not bucket.take(0.2)
    assert all(bucket.take(1.2) for _ in range(5))  # a whole second: the burst again
    assert not bucket.take(1.2)


def test_the_bucket_never_holds_more_than_its_capacity() -> None:
    bucket = TokenBucket(PublishQuota(rate=10, burst=2), now=0.0)
    assert [bucket.take(100.0) for _ in range(3)] == [True, True, False]


def test_a_refused_take_spends_nothing() -> None:
    bucket = TokenBucket(PublishQuota(rate=1, burst=1), now=0.0)
    assert bucket.take(0.0)
    assert not bucket.take(0.5)
    assert bucket.take(1.0)  # the refused one at 0.5 did not cost the half token


def test_time_going_backwards_adds_nothing() -> None:
    bucket = TokenBucket(PublishQuota(rate=1, burst=1), now=10.0)
    assert bucket.take(10.0)
    assert not bucket.take(5.0)
    assert not bucket.take(10.5)
    assert bucket.take(11.0)


@pytest.mark.parametrize(("rate", "burst", "capacity"), [
    (5.0, 0.0, 5.0), (0.5, 0.0, 1.0), (5.0, 20.0, 20.0), (0.0, 0.0, 1.0),
])
def test_capacity_defaults_to_the_rate_at_least_one(rate: float, burst: float,
                                                    capacity: float) -> None:
    assert PublishQuota(rate, burst).capacity == capacity


def test_negative_quota_is_refused() -> None:
    with pytest.raises(ValueError):
        PublishQuota(rate=-1)
    with pytest.raises(ValueError):
        PublishQuota(rate=1, burst=-1)


def test_refill_fills_the_bucket() -> None:
    bucket = TokenBucket(PublishQuota(rate=1, burst=2), now=0.0)
    assert bucket.take(0.0) and bucket.take(0.0) and not bucket.take(0.0)
    bucket.refill(0.0)
    assert bucket.take(0.0) and bucket.take(0.0)


# -- the session core ----------------------------------------------------------------

QUOTA = SessionConfig(publish_quota=PublishQuota(rate=5, burst=5))
WILL = Will("will/c", b"gone")


def attached(level: int, *, problem_info: bool = True) -> SessionCore:
    core = SessionCore("c", QUOTA)
    props = Properties() if problem_info else Properties(request_problem_information=False)
    core.attach(Connect("MQTT", level, "c", True, 60, will=WILL,
                        properties=props if level == 5 else Properties()), 0.0)
    return core


def sent(effects: list[Effect]) -> list[object]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets]


def burst(core: SessionCore, count: int, now: float = 0.0) -> list[Effect]:
    return core.handle_all([Publish("t", b"%d" % i, 0) for i in range(count)], now)


def test_v5_over_quota_is_disconnect_0x97_with_a_reason_string() -> None:
    core = attached(5)
    effects = burst(core, 20)
    assert len([e for e in effects if isinstance(e, Route)]) == 5  # the 6th is not routed
    [disconnect] = sent(effects)
    assert isinstance(disconnect, Disconnect)
    assert disconnect.reason_code == ReasonCode.QUOTA_EXCEEDED
    assert "quota exceeded" in (disconnect.properties.reason_string or "")
    close = effects[-1]
    assert isinstance(close, Close) and close.reason_code == ReasonCode.QUOTA_EXCEEDED
    assert "quota exceeded" in close.reason
    assert not core.attached
    assert [e.message.payload for e in core.detach(0.1) if isinstance(e, PublishWill)] == [b"gone"]


def test_v5_reason_string_only_when_the_client_allows_problem_information() -> None:
    effects = burst(attached(5, problem_info=False), 6)
    [disconnect] = sent(effects)
    assert isinstance(disconnect, Disconnect)
    assert disconnect.reason_code == ReasonCode.QUOTA_EXCEEDED
    assert disconnect.properties.reason_string is None


def test_v3_over_quota_is_a_plain_close() -> None:
    core = attached(4)
    effects = burst(core, 6)
    assert len([e for e in effects if isinstance(e, Route)]) == 5
    assert sent(effects) == []  # no DISCONNECT from a server in MQTT 3
    assert isinstance(effects[-1], Close) and effects[-1].reason_code == ReasonCode.QUOTA_EXCEEDED
    assert [e for e in core.detach(0.1) if isinstance(e, PublishWill)]


def test_within_the_rate_the_client_keeps_publishing() -> None:
    core = attached(5)
    for second in range(10):
        effects = burst(core, 5, now=float(second))
        assert [type(e) for e in effects] == [Route] * 5


def test_a_new_connection_starts_with_a_full_bucket() -> None:
    core = SessionCore("c", QUOTA)
    core.attach(Connect("MQTT", 4, "c", False, 60), 0.0)  # a persistent session
    burst(core, 6)
    core.detach(0.1)
    core.attach(Connect("MQTT", 4, "c", False, 60), 0.1)
    assert [type(e) for e in burst(core, 5, now=0.1)] == [Route] * 5
