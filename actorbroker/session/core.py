"""Session layer: the pure protocol core of one client session. Stdlib, codec and routing only.

:class:`SessionCore` holds what MQTT calls the Session State of one client
id (subscriptions, outbound QoS 1/2 in flight, the queue, inbound QoS 2 ids
awaiting PUBREL) plus what its current connection brought (protocol level,
keepalive, Will). The keepalive itself is enforced by the transport, which
sees every packet for free ([MQTT-3.1.2-24]): the core keeps no timer per
packet and closes nothing for silence. It does no I/O and reads no clock: every method takes
``now`` (monotonic seconds) where time matters and returns the list of
:mod:`~actorbroker.session.effects` its actor carries out, in order.

How the actor drives it::

    CONNECT accepted (connect.check_connect) -> attach(connect, now)
    the same client id connects again         -> take_over(now), then attach(...)
    packets read from the connection          -> handle_all(packets, now)
    Deliver(message, qos) from a topic        -> deliver_now(messages, qos, now) (the fan-out
                                                 fast path: packets, no effects), else deliver(...)
    the connection's output backs up / drains -> hold_output() / release_output(now, limit)
    first PUBLISHes never written (it closed)  -> unsent(packet_ids): resent with DUP=0
    registry answered RequestSubscribe        -> subscribed(packet_id, results, retained, now)
    registry answered RequestUnsubscribe      -> unsubscribed(packet_id, now)
    a timer fired                             -> on_timer(name, now)
    the connection is gone (either side)      -> detach(now)
    administrative removal of an offline one  -> expire(now)
    a restarted actor found its subscriptions -> restore(subscriptions, now)
    ... and the commit log its flows          -> restore_flows(flights, inbound_qos2, unsent)
    the commit log could not store a read's   -> refuse_unstored(acks, code, reason): the
    QoS 1/2 PUBLISHes                            refusals to send in place of the acks
    Deliver with MQTT 5 options / shared       -> deliver_matched(...), deliver5(...)
    re-authentication failed                  -> disconnect(code, reason)

The MQTT 5 rules are in :class:`~.mqtt5.Mqtt5Rules`, a mixin this class
calls at a few hooks; an MQTT 3 connection never reaches them. What the
rest of the broker sends the client through the session (``deliver``,
``hold_output`` / ``release_output``, ``subscribed``, ``unsubscribed``) is
in :class:`~.outbound.OutboundRules`, another mixin, to keep this module short;
what the commit log asks of the core (flows back after a restart,
refusals of what it could not store) is in :class:`~.durable_rules.DurableRules`.

State changes go through the :mod:`~actorbroker.session.lifecycle` table;
calling a method in a state that does not allow it raises
:class:`~actorbroker.session.lifecycle.LifecycleError` (an actor bug). A
peer's misbehaviour never raises: it becomes a ``Close`` effect.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView, Mapping
from types import MappingProxyType

from actorbroker.codec import (
    NO_PROPERTIES,
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    Properties,
    ProtocolError,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    Unsubscribe,
    Will,
)
from actorbroker.codec.reason_codes import DISCONNECT_CODES
from actorbroker.codec.states import ConnectionState, next_state

from . import lifecycle
from .authorization import Grants
from .config import SessionConfig, coalesce
from .durable_rules import DurableRules
from .effects import (
    EXPIRY_TIMER,
    WILL_TIMER,
    CancelTimer,
    Close,
    Effect,
    EndSession,
    RequestUnsubscribe,
    RevokeSubscriptions,
    Send,
    StartTimer,
)
from .lifecycle import SessionState
from .message import Delivery
from .inbound import Inbox
from .link import Link
from .mqtt5 import Mqtt5Rules
from .outbound import OutboundRules, send_effects
from .outbox import Outbox
from .qos_outbound import OutboundState
from .subscriptions import SubscriptionBook

__all__ = ["SessionCore"]

_S = SessionState
# Module globals for the per-packet checks: reading an Enum member off its class costs 80 ns.
_CONNECTED = SessionState.CONNECTED
_WIRE_CONNECTED = ConnectionState.CONNECTED


class SessionCore(OutboundRules, Mqtt5Rules, DurableRules):
    """The Session State of one client id and the rules of its connection (see module doc)."""

    def __init__(self, client_id: str, config: SessionConfig | None = None) -> None:
        self.client_id = client_id
        self.config = config or SessionConfig()
        self._state = lifecycle.INITIAL
        # What the current (or last) connection brought.
        self.protocol_level = 4
        self.clean_session = True
        self.keepalive = 0
        self.will: Will | None = None
        self._disconnect_received = False
        self._closing = False
        self._expiry_armed = False
        #: Seconds the session is kept after its connection (None: forever; MQTT 5: negotiated).
        self.session_expiry: float | None = self.config.session_expiry
        self._link: Link | None = None  # the MQTT 5 connection's state, None at MQTT 3
        self._pending_will: Will | None = None  # an MQTT 5 Will waiting for its delay
        # The Session State proper.
        self._book = SubscriptionBook()
        self._outbox = Outbox(self.config.queue)
        self._inbox = Inbox(client_id, self.config)
        #: Packet ids of the outbound QoS 1/2 flows in flight: a live view, cheap to test
        #: (``if core.flying``) where :attr:`inflight` would build a mapping.
        self.flying: KeysView[int] = self._outbox.inflight.ids()

    # ----------------------------------------------------------------- views

    @property
    def state(self) -> SessionState:
        """Where the session stands in its lifecycle."""
        return self._state

    @property
    def attached(self) -> bool:
        """True while a connection is attached and not being closed."""
        return self._state is _CONNECTED and not self._closing

    @property
    def subscriptions(self) -> Mapping[str, Subscription]:
        """Granted subscriptions by topic filter (``qos`` is the granted QoS)."""
        return self._book.subscriptions

    @property
    def inflight(self) -> Mapping[int, tuple[Delivery, OutboundState]]:
        """Outbound QoS 1/2 deliveries awaiting acknowledgement, by packet id, in resend order."""
        return MappingProxyType({pid: (d, st) for pid, d, st in self._outbox.flights()})

    @property
    def queued(self) -> tuple[Delivery, ...]:
        """Deliveries waiting for the window or for the client, oldest first."""
        return tuple(self._outbox.queue)

    @property
    def queued_bytes(self) -> int:
        """Payload bytes in the queue."""
        return self._outbox.queue.bytes

    @property
    def inflight_count(self) -> int:
        """How many outbound QoS 1/2 deliveries await acknowledgement (cheaper than
        ``len(inflight)``: no copy)."""
        return len(self._outbox.inflight)

    @property
    def output_held(self) -> bool:
        """True while deliveries wait in the queue because the connection is congested."""
        return self._outbox.held

    @property
    def inbound_qos2(self) -> frozenset[int]:
        """Packet ids of client QoS 2 PUBLISHes routed and awaiting PUBREL."""
        return frozenset(self._inbox.qos2)

    # ------------------------------------------------------------ lifecycle

    def attach(
        self, connect: Connect, now: float, *, connack_properties: Properties = NO_PROPERTIES,
        assigned: bool = False, auth_data: bytes | None = None,
    ) -> list[Effect]:
        """A connection whose CONNECT was accepted attaches to this session.

        Sends CONNACK (Session Present when a persistent session resumes,
        [MQTT-3.2.2-2]; never at MQTT 3.1, whose CONNACK has no such flag),
        then every unacknowledged PUBLISH with DUP=1 (DUP=0 if it was never
        written, :meth:`unsent`) and every PUBREL in their order ([MQTT-4.4.0-1]), then as much of the queue as the window takes.
        Clean Session 1 (or a clean session taken over) discards the old state
        first ([MQTT-3.1.2-6]). MQTT 5: ``assigned`` says the broker made the
        client id up, ``auth_data`` is the last Authentication Data of an
        enhanced authentication; both go in the CONNACK.
        """
        before = self._state
        discard = connect.clean_start or (before is _S.TAKEN_OVER and self.clean_session)
        self._state = lifecycle.advance(before, lifecycle.ATTACH)
        effects: list[Effect] = self._settle_will(now, publish=discard)
        if discard and before is not _S.NEW:
            effects += self._discard_state()
        resumed = before in (_S.DISCONNECTED, _S.TAKEN_OVER) and not discard
        self.protocol_level = connect.protocol_level
        self.clean_session = connect.clean_start
        self.keepalive = connect.keepalive
        self.will = connect.will
        self._inbox.v5 = connect.protocol_level == 5
        self._disconnect_received = self._closing = False
        self._inbox.quota.refill(now)  # each connection starts with its full burst
        if self.protocol_level == 5:
            connack_properties, negotiated = self._negotiate(
                connect, assigned=assigned, auth_data=auth_data)
            effects += negotiated
        else:
            self.session_expiry = self.config.session_expiry
            self._reset_link()
        connack = ConnAck(resumed and self.protocol_level != 3, 0, connack_properties)
        packets, dropped = self._outbox.resume(now)
        effects += send_effects([connack, *self._outgoing(packets)], dropped)
        if self._expiry_armed:
            self._expiry_armed = False
            effects.append(CancelTimer(EXPIRY_TIMER))
        return effects

    def take_over(self, now: float) -> list[Effect]:
        """Another connection with this client id arrived: close the attached one.

        Its Will is published (it did not DISCONNECT); what survives is
        decided by the :meth:`attach` of the new connection, which must follow.
        """
        self._state = lifecycle.advance(self._state, lifecycle.TAKE_OVER)
        effects = self._close(
            ReasonCode.SESSION_TAKEN_OVER,
            "[MQTT-3.1.4-2] (5.0: [MQTT-3.1.4-3]) the client id connected again",
        )
        return effects + self._connection_ended(now, graceful=False)

    def detach(self, now: float, *, graceful: bool = False) -> list[Effect]:
        """The attached connection is gone (closed by either side).

        The Will is published unless the client sent DISCONNECT or the
        caller says ``graceful`` ([MQTT-3.1.2-8], [MQTT-3.1.2-10]). A clean
        session ends here ([MQTT-3.1.2-6]); a persistent one keeps its state
        and queues QoS 1/2 messages ([MQTT-3.1.2-4], [MQTT-3.1.2-5]) until it expires.
        """
        ended = self.clean_session
        self._state = lifecycle.advance(self._state, lifecycle.END if ended else lifecycle.DETACH)
        self._outbox.held = False
        effects = self._connection_ended(now, graceful=graceful)
        if ended:
            effects += self._discard_state()
            effects.append(EndSession("clean session ended with its connection"))
        else:
            effects += self._hand_back()
            if self.session_expiry is not None:
                self._expiry_armed = True
                effects.append(StartTimer(EXPIRY_TIMER, self.session_expiry))
        return effects

    def expire(self, now: float) -> list[Effect]:
        """End an offline persistent session: its state is discarded."""
        self._state = lifecycle.advance(self._state, lifecycle.EXPIRE)
        self._expiry_armed = False
        effects = self._settle_will(now, publish=True)  # [MQTT-3.1.3-9]: at the session's end
        return [*effects, *self._discard_state(), EndSession("persistent session expired")]

    def restore(self, subscriptions: Iterable[Subscription], now: float) -> list[Effect]:
        """Take back the subscriptions of a persistent session whose actor was restarted.

        Only for a NEW core: the session is then DISCONNECTED with these
        subscriptions (the registry still holds them), so that the client's
        next CONNECT with Clean Session 0 resumes it ([MQTT-3.2.2-2]). What
        was in flight or queued died with the old actor.
        """
        self._state = lifecycle.advance(self._state, lifecycle.RESTORE)
        self.clean_session = False
        self._book.restore(subscriptions)
        if self.config.session_expiry is None:
            return []
        self._expiry_armed = True
        return [StartTimer(EXPIRY_TIMER, self.config.session_expiry)]

    @property
    def grants(self) -> Grants | None:
        """The attached (or last attached) client's rights; None without an ACL."""
        return self._inbox.acl

    def authorize(self, grants: Grants | None) -> list[Effect]:
        """Apply the rights of the attached client (None: no ACL) from now on.

        Called after :meth:`attach` and whenever the ACL is reloaded:
        PUBLISH and SUBSCRIBE are checked against ``grants``, and the
        subscriptions it no longer allows are removed (``RevokeSubscriptions``:
        the actor removes them from the registry, and journals it).
        """
        self._inbox.acl = grants
        if grants is None:
            return []
        revoked = self._book.revoke(self._unreadable)
        return [RevokeSubscriptions(revoked)] if revoked else []

    def on_timer(self, name: str, now: float) -> list[Effect]:
        """A timer the core asked for fired; stale firings are ignored."""
        if name == EXPIRY_TIMER:
            if self._state is not _S.DISCONNECTED or not self._expiry_armed:
                return []
            return self.expire(now)
        if name == WILL_TIMER:
            return self._will_timer(now)
        raise ValueError(f"unknown timer {name!r}")

    # ------------------------------------------------------------- inbound

    def handle_all(self, packets: Iterable[Packet], now: float) -> list[Effect]:
        """:meth:`handle` each packet of one read, adjacent sends merged."""
        effects: list[Effect] = []
        if self._link is not None:
            self._link.quota.read_started()
        for packet in packets:
            effects += self.handle(packet, now)
        return coalesce(effects)

    def handle(self, packet: Packet, now: float) -> list[Effect]:
        """One packet from the attached client; ignored once the core asked to close."""
        if self._state is not _CONNECTED:
            raise lifecycle.LifecycleError(
                f"{type(packet).__name__} handled while the session is {self._state.name}"
            )
        if self._closing:
            return []
        try:
            # Second CONNECT, server-to-client packets: ProtocolError.
            next_state(_WIRE_CONNECTED, packet.packet_type)
            match packet:
                case Publish():
                    if self._link is not None:
                        return self._publish5(packet, now)
                    accepted = self._inbox.publish(packet, now)
                    return [] if accepted is None else [accepted]
                case PubAck() | PubRec() | PubComp():
                    packets, dropped = self._outbox.ack(packet, now, level=self.protocol_level)
                    return send_effects(self._outgoing(packets), dropped)
                case PubRel():
                    return [Send((self._inbox.release(packet.packet_id, level=self.protocol_level),))]
                case Subscribe():
                    sub_ids = packet.properties.subscription_identifier
                    answer = self._book.subscribe(
                        packet, level=self.protocol_level, max_qos=self.config.max_qos,
                        refuse=self._subscribe_refusal(sub_ids[0] if sub_ids else None),
                        limits=self.config.subscription_limits,
                    )
                    return [Send((answer,))] if isinstance(answer, SubAck) else [answer]
                case Unsubscribe():
                    return [self._book.unsubscribe(packet)]
                case PingReq():
                    return [Send((PingResp(),))]
                case Disconnect():
                    if self._link is not None:
                        self._disconnect5(packet)
                    # MQTT 5 reason 0x04 asks for the Will all the same.
                    self._disconnect_received = (
                        packet.reason_code != ReasonCode.DISCONNECT_WITH_WILL_MESSAGE
                    )
                    self._closing = True
                    return [Close(ReasonCode.NORMAL_DISCONNECTION, "client sent DISCONNECT")]
                case Auth():
                    return self._auth5(packet)
                case _:
                    raise ProtocolError(f"{type(packet).__name__} is not supported yet")
        except ProtocolError as exc:
            return self._close(exc.reason_code, str(exc))

    # ------------------------------------------------------------- helpers

    def _close(self, code: ReasonCode, reason: str) -> list[Effect]:
        """Ask the actor to close the connection (MQTT 5: DISCONNECT first); wait for detach."""
        self._closing = True
        link = self._link
        if code not in DISCONNECT_CODES:  # e.g. 0x91 (a reused packet id): not a DISCONNECT's
            code_sent = ReasonCode.PROTOCOL_ERROR
        else:
            code_sent = code
        disconnect = [Disconnect(code_sent, link.reason(reason))] if link is not None else []
        return send_effects(disconnect, [Close(code, reason)])

    def _connection_ended(self, now: float, *, graceful: bool) -> list[Effect]:
        effects: list[Effect] = []
        will, self.will = self.will, None  # [MQTT-3.1.2-10]: published or discarded, never kept
        if will is not None and not graceful and not self._disconnect_received:
            effects += self._will_ended(will, now)  # MQTT 5: maybe after its Will Delay Interval
        self._closing = False
        self._book.connection_lost()
        self._reset_link()
        return effects

    def _discard_state(self) -> list[Effect]:
        """Forget the Session State; report undelivered messages and the filters to remove.

        Shared-subscription deliveries the client lacks go back to their group first.
        """
        effects: list[Effect] = self._hand_back()
        effects += self._outbox.discard()
        self._inbox.qos2.clear()
        filters = self._book.clear()
        if filters:
            effects.append(RequestUnsubscribe(None, filters))
        return effects
