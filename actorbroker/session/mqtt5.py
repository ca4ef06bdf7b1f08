"""Session layer: the MQTT 5 rules of the session core, as a mixin of SessionCore. Stdlib, codec and routing only.

:class:`~actorbroker.session.core.SessionCore` holds the MQTT 3 rules and
calls these at a few hooks; an MQTT 3 connection never reaches them (its
core has no :class:`~.link.Link`), so its hot path is unchanged. A session
may be used by MQTT 3 and MQTT 5 connections in turn: what belongs to the
connection (limits, Topic Aliases) lives in the Link and goes with it.

* CONNECT: the negotiation of :mod:`.negotiation` (Session Expiry, Server
  Keep Alive, the CONNACK's properties); the inflight window lowered to the
  client's Receive Maximum, deliveries held to its Maximum Packet Size.
* Session expiry: a session whose Session Expiry Interval is 0 ends with its
  connection (it is "clean" in MQTT 3 terms); otherwise it is kept that long
  after the connection ends (0xFFFFFFFF: forever). The DISCONNECT may change
  the interval, except from 0 to another value ([MQTT-3.14.2-2]).
* Will Delay Interval ([MQTT-3.1.3-9]): a Will waits that long (never past
  the session's end) and is dropped if the session is resumed meanwhile; it
  is published when the session ends first (expiry, or a Clean Start).
* Subscription options (:mod:`.suboptions`) and Subscription Identifiers on
  delivery; refusals of filters the broker does not serve (SUBACK 0x9E,
  0xA1, 0xA2).
* Shared subscriptions: a delivery through one is a :class:`~.message.Delivery5`
  with its ``group``. When the client goes away, what it does not have yet
  (queued, or QoS 1 without PUBACK) is handed back to the group
  (:class:`~.effects.HandBackShared`); a QoS 2 delivery in flight stays
  ([MQTT-4.8.2-4], [MQTT-4.8.2-5]). One that reaches a session after it
  ended, or an offline one when it was sent to it as to an online member
  (``final=False``), goes back too.
* AUTH after CONNACK is re-authentication with the CONNECT's method
  (section 4.12.1), carried out by the actor (:class:`~.effects.Reauthenticate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from actorbroker.codec import (
    Auth,
    Connect,
    Disconnect,
    Packet,
    Properties,
    ProtocolError,
    Publish,
    ReasonCode,
    Subscription,
    Will,
)
from actorbroker.routing import has_wildcards, matches, parse_shared

from .config import SessionConfig
from .effects import (
    WILL_TIMER,
    CancelTimer,
    Dropped,
    DropReason,
    Effect,
    HandBackShared,
    PublishWill,
    Reauthenticate,
    Send,
    SetKeepAlive,
    StartTimer,
)
from .inbound import Inbox
from .lifecycle import SessionState
from .link import Link
from .message import AppMessage, Delivery5
from .negotiation import connack_properties, negotiate_expiry, server_keep_alive, will_delay
from .outbox import Outbox
from .subscriptions import FAILURE, SubscribeConfirmed
from .suboptions import Match, select

__all__ = ["Mqtt5Rules"]

_S = SessionState


class Mqtt5Rules:
    """The MQTT 5 half of :class:`~actorbroker.session.core.SessionCore` (see the module doc)."""

    # SessionCore's state, declared for the type checker (SessionCore sets it).
    client_id: str
    config: SessionConfig
    protocol_level: int
    clean_session: bool
    keepalive: int
    session_expiry: float | None
    _state: SessionState
    _link: Link | None
    _pending_will: Will | None
    _outbox: Outbox
    _inbox: Inbox

    if TYPE_CHECKING:
        @property
        def attached(self) -> bool: ...

        def _close(self, code: ReasonCode, reason: str) -> list[Effect]: ...

        def deliver(self, message: AppMessage, qos: int, now: float, *,
                    retain: bool = False) -> list[Effect]: ...

    # -- connection -------------------------------------------------------------------

    def _negotiate(self, connect: Connect, *, assigned: bool,
                   auth_data: bytes | None) -> tuple[Properties, list[Effect]]:
        """Set up the Link of an MQTT 5 connection; its CONNACK properties and effects."""
        config = self.config
        policy = config.mqtt5
        link = self._link = Link(connect, policy)
        self.session_expiry, told = negotiate_expiry(
            connect.properties.session_expiry_interval or 0, policy.max_session_expiry)
        self.clean_session = self.session_expiry == 0
        keep = server_keep_alive(connect.keepalive, policy.max_keepalive)
        effects: list[Effect] = []
        if keep is not None:
            self.keepalive = keep
            effects.append(SetKeepAlive(keep))
        self._outbox.window = min(config.queue.max_inflight, link.receive_maximum)
        self._outbox.fits = link.fits if link.max_packet_size is not None else None
        properties = connack_properties(
            connect, policy, client_id=self.client_id, assigned=assigned,
            max_qos=config.max_qos, retain_available=config.retain_available,
            expiry_told=told, keep_alive_told=keep, auth_data=auth_data,
        )
        return properties, effects

    def _reset_link(self) -> None:
        """No MQTT 5 connection (any more): the broker's own limits apply."""
        self._link = None
        self._outbox.window = self.config.queue.max_inflight
        self._outbox.fits = None

    def _disconnect5(self, packet: Disconnect) -> None:
        """The client's DISCONNECT may change the Session Expiry Interval."""
        interval = packet.properties.session_expiry_interval
        link = self._link
        if interval is None or link is None:
            return
        if link.requested_expiry == 0 and interval != 0:
            raise ProtocolError("[MQTT-3.14.2-2] DISCONNECT sets a Session Expiry Interval"
                                " after CONNECT set 0")
        self.session_expiry, _ = negotiate_expiry(interval, self.config.mqtt5.max_session_expiry)
        self.clean_session = self.session_expiry == 0

    def disconnect(self, code: ReasonCode, reason: str) -> list[Effect]:
        """Close the attached connection with DISCONNECT ``code`` (e.g. re-authentication failed)."""
        if not self.attached:
            return []
        return self._close(code, reason)

    # -- inbound ----------------------------------------------------------------------

    def _publish5(self, packet: Publish, now: float) -> list[Effect]:
        link = self._link
        assert link is not None
        accepted = link.accept(packet, self._inbox.qos2)
        if type(accepted) is not Publish:
            return [Send((accepted,))]
        routed = self._inbox.publish(accepted, now)
        return [] if routed is None else [routed]

    def _auth5(self, packet: Auth) -> list[Effect]:
        link = self._link
        if link is None or link.auth_method is None:
            raise ProtocolError("(section 4.12) AUTH from a client that named no Authentication"
                                " Method in CONNECT")
        if packet.properties.authentication_method != link.auth_method:
            raise ProtocolError(f"[MQTT-4.12.1-1] re-authentication must use the CONNECT's"
                                f" Authentication Method {link.auth_method!r}")
        return [Reauthenticate(packet)]

    def _refusal(self, sub: Subscription) -> int | None:
        """The SUBACK code for a well-formed filter the broker does not serve, or None."""
        policy = self.config.mqtt5
        shared = parse_shared(sub.topic_filter) if self.protocol_level == 5 else None
        if shared is not None and not policy.shared_available:
            return ReasonCode.SHARED_SUBSCRIPTIONS_NOT_SUPPORTED
        inner = sub.topic_filter if shared is None else shared.filter
        if not policy.wildcard_available and has_wildcards(inner):
            return ReasonCode.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED
        acl = self._inbox.acl
        if acl is not None and not acl.may_subscribe(inner):
            return ReasonCode.NOT_AUTHORIZED if self.protocol_level == 5 else FAILURE
        return None

    def _unreadable(self, topic_filter: str) -> bool:
        """True if the ACL in force does not allow a subscription to ``topic_filter``."""
        acl = self._inbox.acl
        shared = parse_shared(topic_filter) if self.protocol_level == 5 else None
        inner = topic_filter if shared is None else shared.filter
        return acl is not None and not acl.may_subscribe(inner)

    def _subscribe_refusal(self, subscription_id: int | None
                           ) -> Callable[[Subscription], int | None]:
        """The refusal hook of one SUBSCRIBE (0xA1 for all when it has an unwanted identifier)."""
        if subscription_id and not self.config.mqtt5.subscription_ids_available:
            return lambda _sub: ReasonCode.SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED
        return self._refusal

    # -- outbound ---------------------------------------------------------------------

    def deliver5(
        self, message: AppMessage, qos: int, now: float, *, retain: bool = False,
        subscription_ids: tuple[int, ...] = (), group: str | None = None, final: bool = True,
    ) -> list[Effect]:
        """:meth:`deliver` with MQTT 5 extras: Subscription Identifiers, the shared group.

        A shared delivery (``group``) that finds the session ended, or offline
        when it was chosen as an online member (``final`` False), is handed
        back to its group at once.
        """
        delivery = Delivery5(message, min(message.qos, qos), retain, subscription_ids, group)
        if group is not None and delivery.qos and (
                self._state is _S.ENDED or (not final and not self.attached)):
            return [HandBackShared((delivery,))]
        if self._state is _S.ENDED:
            return [Dropped(message, delivery.qos, DropReason.SESSION_ENDED)]
        packets, dropped = self._outbox.deliver(delivery, now, online=self.attached)
        effects: list[Effect] = [Send(tuple(self._outgoing(packets)))] if packets else []
        effects.extend(dropped)
        return effects

    def deliver_matched(self, message: AppMessage, matches: Sequence[Match],
                        now: float) -> list[Effect]:
        """Deliver ``message`` through the client's subscriptions with options that match it."""
        selected = select(matches, message.publisher, self.client_id)
        if selected is None:
            return []  # No Local on every matching subscription
        return self.deliver5(message, selected.qos, now,
                             retain=message.retain and selected.retain_as_published,
                             subscription_ids=selected.subscription_ids)

    def _outgoing(self, packets: Sequence[Packet]) -> Sequence[Packet]:
        """Packets as they go out (MQTT 5: Topic Aliases applied)."""
        link = self._link
        return packets if link is None else link.outgoing(packets)

    def _deliver_retained(self, confirmed: SubscribeConfirmed, retained: Sequence[AppMessage],
                          now: float) -> list[Effect]:
        """The retained messages a SUBSCRIBE brings, as its Retain Handling says.

        Each at the highest QoS granted to a filter of the SUBSCRIBE that
        matches and wants it (0: always, 1: only a new subscription, 2: never;
        MQTT 3 filters are 0), with the SUBSCRIBE's Subscription Identifier.
        """
        wanted = [s for s in confirmed.granted if s.retain_handling == 0 or (
            s.retain_handling == 1 and s.topic_filter in confirmed.fresh)]
        sub_id = confirmed.subscription_id
        effects: list[Effect] = []
        for message in retained:
            granted = [s.qos for s in wanted if matches(s.topic_filter, message.topic)]
            if not granted:
                if not any(matches(s.topic_filter, message.topic) for s in confirmed.granted):
                    raise ValueError(f"retained topic {message.topic!r} matches no granted filter")
                continue
            if sub_id is None:
                effects += self.deliver(message, max(granted), now, retain=True)
            else:
                effects += self.deliver5(message, max(granted), now, retain=True,
                                         subscription_ids=(sub_id,))
        return effects

    def _hand_back(self) -> list[Effect]:
        taken = self._outbox.take_shared()
        return [HandBackShared(tuple(taken))] if taken else []

    # -- Will Delay Interval ----------------------------------------------------------

    def _will_ended(self, will: Will, now: float) -> list[Effect]:
        """The connection ended without DISCONNECT: publish ``will`` now or after its delay."""
        if self.protocol_level == 5:
            delay = will_delay(will, 0.0 if self.clean_session else self.session_expiry)
            if delay > 0:
                self._pending_will = will
                return [StartTimer(WILL_TIMER, delay)]
        return [PublishWill(AppMessage.from_will(will, publisher=self.client_id, received_at=now))]

    def _settle_will(self, now: float, *, publish: bool) -> list[Effect]:
        """A delayed Will meets a new connection (dropped) or the session's end (published)."""
        will, self._pending_will = self._pending_will, None
        if will is None:
            return []
        effects: list[Effect] = [CancelTimer(WILL_TIMER)]
        if publish:
            effects.append(PublishWill(
                AppMessage.from_will(will, publisher=self.client_id, received_at=now)))
        return effects

    def _will_timer(self, now: float) -> list[Effect]:
        """The Will Delay Interval passed with the client still away: publish the Will."""
        will, self._pending_will = self._pending_will, None
        if will is None:
            return []  # a stale firing: the session was resumed or ended meanwhile
        return [PublishWill(AppMessage.from_will(will, publisher=self.client_id, received_at=now))]
