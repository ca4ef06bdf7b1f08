"""SubscriptionBook under SubscriptionLimits: a quota per client, filter length and depth."""

from __future__ import annotations

import pytest

from actorbroker.codec import ProtocolError, ReasonCode, SubAck, Subscribe, Subscription
from actorbroker.session import RequestSubscribe
from actorbroker.session.subscriptions import SubscriptionBook, SubscriptionLimits

LIMITS = SubscriptionLimits(max_subscriptions=3, max_filter_length=20, max_filter_levels=3)


def _subscribe(book: SubscriptionBook, packet_id: int, *filters: str,
               level: int = 4) -> RequestSubscribe | SubAck:
    packet = Subscribe(packet_id, tuple(Subscription(f, 1) for f in filters))
    return book.subscribe(packet, level=level, max_qos=2, limits=LIMITS)


@pytest.mark.parametrize("level, refused", [(4, 0x80), (5, ReasonCode.QUOTA_EXCEEDED)])
def test_the_quota_counts_unanswered_requests_and_not_replacements(level: int,
                                                                    refused: int) -> None:
    book = SubscriptionBook()
    assert isinstance(_subscribe(book, 1, "a", "b", level=level), RequestSubscribe)
    book.subscribed(1)
    # "a" again replaces its subscription, "c" fits, "d" is one too many.
    second = _subscribe(book, 2, "a", "c", "d", level=level)
    assert isinstance(second, RequestSubscribe)
    assert [s.topic_filter for s in second.subscriptions] == ["a", "c"]
    # Unanswered, "c" counts already: nothing new fits, so the SUBACK is answered here.
    assert _subscribe(book, 3, "e", level=level) == SubAck(3, (refused,))
    assert book.subscribed(2).suback.reason_codes == (1, 1, refused)
    assert isinstance(_subscribe(book, 4, "b", level=level), RequestSubscribe)  # held: fine


@pytest.mark.parametrize("level, refused", [(4, 0x80), (5, ReasonCode.TOPIC_FILTER_INVALID)])
def test_too_long_or_too_deep_filters_are_invalid(level: int, refused: int) -> None:
    book = SubscriptionBook()
    answer = _subscribe(book, 1, "x" * 21, "a/b/c/d", "a/b/c", level=level)
    assert isinstance(answer, RequestSubscribe)
    assert [s.topic_filter for s in answer.subscriptions] == ["a/b/c"]
    assert book.subscribed(1).suback.reason_codes == (refused, refused, 1)


def test_mqtt31_cannot_refuse_so_the_connection_closes() -> None:
    book = SubscriptionBook()
    with pytest.raises(ProtocolError):
        _subscribe(book, 1, "a", "b", "c", "d", level=3)
    with pytest.raises(ProtocolError):
        _subscribe(SubscriptionBook(), 1, "a/b/c/d", level=3)
