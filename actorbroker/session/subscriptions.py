"""Session layer: one session's subscriptions and its SUBSCRIBE/UNSUBSCRIBE in progress. Stdlib, codec, routing.

A SUBSCRIBE is checked here (filter syntax, QoS capped to the broker's
maximum), then asked of the registry (the only writer of the filter trie, so
subscriptions are ordered); the SUBACK is built when the registry answers.
An invalid filter gets failure code 0x80 in its SUBACK entry at MQTT 3.1.1
([MQTT-3.9.3-2]) and 0x8F at MQTT 5; MQTT 3.1 has no failure code, so there
the connection is closed. The same happens on UNSUBSCRIBE, whose UNSUBACK
is built when the registry has removed the filters.

``$share/{group}/{filter}`` is a shared subscription for MQTT 5 clients
only; for MQTT 3 clients it stays a plain filter, as it always was here.
MQTT 5 adds refusals of well-formed filters the broker does not serve (the
``refuse`` hook: 0x9E, 0xA1, 0xA2) and the SUBSCRIBE's Subscription
Identifier, which travels with the request.

Answers for one packet identifier must come back in the order the requests
were made (the registry handles one client's requests in order). A request
outlives its connection: answered after a disconnect, its subscriptions
still count (persistent session) but no SUBACK is sent; answered after the
session state was discarded, it changes nothing here (the discarding asked
the registry to remove its filters too).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from actorbroker.codec import (
    ProtocolError,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
)
from actorbroker.codec.frozen import quick_init
from actorbroker.routing import TopicError, validate_subscription_filter

from .effects import RequestSubscribe, RequestUnsubscribe

__all__ = ["NO_LIMITS", "SubscribeConfirmed", "SubscriptionBook", "SubscriptionLimits"]

#: SUBACK failure code of MQTT 3.1.1 ([MQTT-3.9.3-2]).
FAILURE = 0x80


@dataclass(frozen=True, slots=True)
class SubscriptionLimits:
    """What one client may subscribe: ``max_subscriptions`` filters in all (granted and
    asked; a filter it already has replaces it and does not count), each at most
    ``max_filter_length`` characters and ``max_filter_levels`` levels. 0: no limit.

    Beyond ``max_subscriptions`` a filter is refused with 0x97 Quota exceeded
    (MQTT 5) or 0x80 (3.1.1); a filter too long or too deep is an invalid
    filter (0x8F, 0x80). MQTT 3.1 SUBACKs cannot refuse: the connection closes.
    The length and depth bound published topic names too (``inbound.Inbox``).
    """

    max_subscriptions: int = 0
    max_filter_length: int = 0
    max_filter_levels: int = 0

    def refusal(self, topic_filter: str) -> str | None:
        """Why the filter is too long or too deep, or None."""
        if self.max_filter_length and len(topic_filter) > self.max_filter_length:
            return (f"topic of {len(topic_filter)} characters, more than the"
                    f" {self.max_filter_length} allowed")
        if self.max_filter_levels and topic_filter.count("/") >= self.max_filter_levels:
            return (f"topic of {topic_filter.count('/') + 1} levels, more than the"
                    f" {self.max_filter_levels} allowed")
        return None


NO_LIMITS = SubscriptionLimits()


@dataclass(slots=True)
class _Pending:
    """A request the registry has not answered: what was asked, and what to do with the answer."""

    entries: tuple[Subscription | int, ...] | tuple[str, ...]
    reply: bool = True  # the connection that asked is still attached
    keep: bool = True  # the session state it belongs to still exists
    subscription_id: int | None = None
    new: int = 0  # filters asked that the session did not have (max_subscriptions counts them)


@quick_init
@dataclass(frozen=True, slots=True)
class SubscribeConfirmed:
    """The registry answered a SUBSCRIBE: the SUBACK, what was granted, whether to send it."""

    suback: SubAck
    granted: tuple[Subscription, ...]
    reply: bool
    #: MQTT 5: the Subscription Identifier of the SUBSCRIBE (None: none).
    subscription_id: int | None = None
    #: Granted filters the session had no subscription on before (Retain Handling 1).
    fresh: frozenset[str] = frozenset()


def _push(
    table: dict[int, deque[_Pending]], other: dict[int, deque[_Pending]],
    packet_id: int, pending: _Pending,
) -> None:
    """Record ``pending``; its id must not be in use by a SUBSCRIBE or UNSUBSCRIBE of this connection."""
    if any(p.reply for t in (table, other) for p in t.get(packet_id, ())):
        raise ProtocolError(
            f"[MQTT-2.2.1-3] (3.1.1: [MQTT-2.3.1-2]) packet identifier {packet_id}"
            " reused while its previous request is unanswered",
            ReasonCode.PACKET_IDENTIFIER_IN_USE,
        )
    table.setdefault(packet_id, deque()).append(pending)


def _pop(table: dict[int, deque[_Pending]], packet_id: int, what: str) -> _Pending:
    queue = table.get(packet_id)
    if not queue:
        raise ValueError(f"no {what} with packet identifier {packet_id} awaits an answer")
    pending = queue.popleft()
    if not queue:
        del table[packet_id]
    return pending


class SubscriptionBook:
    """Granted subscriptions by filter, and the requests awaiting the registry."""

    __slots__ = ("_subs", "_subscribing", "_unsubscribing", "_asked")

    def __init__(self) -> None:
        self._subs: dict[str, Subscription] = {}
        self._asked = 0  # new filters in requests the registry has not answered
        self._subscribing: dict[int, deque[_Pending]] = {}
        self._unsubscribing: dict[int, deque[_Pending]] = {}

    @property
    def subscriptions(self) -> Mapping[str, Subscription]:
        """Granted subscriptions (``qos`` is the granted QoS), by topic filter."""
        return MappingProxyType(self._subs)

    def subscribe(
        self, packet: Subscribe, *, level: int, max_qos: int,
        refuse: Callable[[Subscription], int | None] | None = None,
        limits: SubscriptionLimits = NO_LIMITS,
    ) -> RequestSubscribe | SubAck:
        """Check a SUBSCRIBE: the registry request, or the SUBACK if nothing is left to ask.

        ``refuse(subscription)`` (MQTT 5) returns the failure code for a
        well-formed filter the broker does not serve, or None. Raises
        ProtocolError for an invalid filter at MQTT 3.1 and for a packet
        identifier still in use by an unanswered request. ``limits``: see
        :class:`SubscriptionLimits`.
        """
        entries: list[Subscription | int] = []
        new = 0
        room = limits.max_subscriptions - len(self._subs) - self._asked
        for sub in packet.subscriptions:
            try:
                validate_subscription_filter(sub.topic_filter, shared_allowed=level == 5)
                why = limits.refusal(sub.topic_filter)
                if why is not None:
                    raise TopicError(why)
            except TopicError as exc:
                if level == 3:
                    raise ProtocolError(
                        f"{exc} (a MQTT 3.1 SUBACK cannot refuse a filter)",
                        ReasonCode.TOPIC_FILTER_INVALID,
                    ) from None
                entries.append(ReasonCode.TOPIC_FILTER_INVALID if level == 5 else FAILURE)
                continue
            code = None if refuse is None else refuse(sub)
            if code is not None:
                entries.append(code)
                continue
            if limits.max_subscriptions and sub.topic_filter not in self._subs:
                if new >= room:
                    if level == 3:
                        raise ProtocolError(
                            f"more than max_subscriptions {limits.max_subscriptions} (a MQTT 3.1"
                            " SUBACK cannot refuse a filter)", ReasonCode.QUOTA_EXCEEDED)
                    entries.append(ReasonCode.QUOTA_EXCEEDED if level == 5 else FAILURE)
                    continue
                new += 1
            entries.append(sub if sub.qos <= max_qos else dataclasses.replace(sub, qos=max_qos))
        asked = tuple(e for e in entries if isinstance(e, Subscription))
        if not asked:
            return SubAck(packet.packet_id, tuple(int(e) for e in entries if isinstance(e, int)))
        sub_id = None
        if level == 5 and packet.properties.subscription_identifier:
            sub_id = packet.properties.subscription_identifier[0]
        _push(self._subscribing, self._unsubscribing, packet.packet_id,
              _Pending(tuple(entries), subscription_id=sub_id, new=new))
        self._asked += new
        return RequestSubscribe(packet.packet_id, asked, sub_id)

    def subscribed(self, packet_id: int, results: Sequence[int] | None = None) -> SubscribeConfirmed:
        """Apply the registry's answer to the oldest SUBSCRIBE with ``packet_id``.

        ``results`` holds one code per subscription asked: the granted QoS
        (may be lower than asked) or a failure code >= 0x80; None grants
        everything as asked. ValueError if nothing awaits this answer or the
        count is wrong.
        """
        pending = _pop(self._subscribing, packet_id, "SUBSCRIBE")
        self._asked -= pending.new
        asked = [e for e in pending.entries if isinstance(e, Subscription)]
        codes = [sub.qos for sub in asked] if results is None else [int(r) for r in results]
        if len(codes) != len(asked):
            raise ValueError(f"{len(codes)} results for {len(asked)} subscriptions")
        answers = iter(codes)
        suback_codes: list[int] = []
        granted: list[Subscription] = []
        fresh: set[str] = set()
        for entry in pending.entries:
            if not isinstance(entry, Subscription):
                suback_codes.append(int(entry))
                continue
            code = next(answers)
            suback_codes.append(code)
            if code < FAILURE:
                sub = entry if entry.qos == code else dataclasses.replace(entry, qos=code)
                granted.append(sub)
                if pending.keep:
                    if sub.topic_filter not in self._subs:
                        fresh.add(sub.topic_filter)
                    self._subs[sub.topic_filter] = sub
        return SubscribeConfirmed(
            SubAck(packet_id, tuple(suback_codes)),
            tuple(granted) if pending.keep else (),
            pending.reply and pending.keep,
            pending.subscription_id,
            frozenset(fresh),
        )

    def unsubscribe(self, packet: Unsubscribe) -> RequestUnsubscribe:
        """The registry request for an UNSUBSCRIBE (ProtocolError if its id is in use)."""
        _push(self._unsubscribing, self._subscribing, packet.packet_id,
              _Pending(packet.topic_filters))
        return RequestUnsubscribe(packet.packet_id, packet.topic_filters)

    def unsubscribed(self, packet_id: int, *, level: int) -> tuple[UnsubAck, bool]:
        """Apply the registry's answer to the oldest UNSUBSCRIBE with ``packet_id``.

        Returns the UNSUBACK (MQTT 5: one reason code per filter, 0x11 for a
        filter that had no subscription) and whether to send it.
        """
        pending = _pop(self._unsubscribing, packet_id, "UNSUBSCRIBE")
        codes: list[int] = []
        for topic_filter in pending.entries:
            assert isinstance(topic_filter, str)
            existed = pending.keep and self._subs.pop(topic_filter, None) is not None
            codes.append(ReasonCode.SUCCESS if existed else ReasonCode.NO_SUBSCRIPTION_EXISTED)
        return UnsubAck(packet_id, tuple(codes) if level == 5 else ()), pending.reply and pending.keep

    def revoke(self, refused: Callable[[str], bool]) -> tuple[str, ...]:
        """Drop the granted subscriptions whose filter ``refused``; return their filters."""
        filters = tuple(f for f in self._subs if refused(f))
        for topic_filter in filters:
            del self._subs[topic_filter]
        return filters

    def restore(self, subscriptions: Iterable[Subscription]) -> None:
        """Take back granted subscriptions the registry holds (a restarted session)."""
        for sub in subscriptions:
            self._subs[sub.topic_filter] = sub

    def connection_lost(self) -> None:
        """The connection went: answers to its requests are no longer sent."""
        for table in (self._subscribing, self._unsubscribing):
            for queue in table.values():
                for pending in queue:
                    pending.reply = False

    def clear(self) -> tuple[str, ...]:
        """Discard everything; return every filter the registry may hold for this session.

        That is the granted filters and those of unanswered SUBSCRIBEs; the
        caller asks the registry to remove them.
        """
        filters = dict.fromkeys(self._subs)
        for queue in self._subscribing.values():
            for pending in queue:
                if pending.keep:
                    filters.update(
                        dict.fromkeys(e.topic_filter for e in pending.entries
                                      if isinstance(e, Subscription))
                    )
        for table in (self._subscribing, self._unsubscribing):
            for queue in table.values():
                for pending in queue:
                    pending.reply = pending.keep = False
        self._subs.clear()
        return tuple(filters)

    def pending(self) -> int:
        """Requests awaiting the registry."""
        return sum(map(len, self._subscribing.values())) + sum(map(len, self._unsubscribing.values()))
