"""Durability layer: what a session does, as commit log records, and back. Stdlib, codec, session and persistence only.

Pure functions, no clock (the caller passes ``ts``, microseconds since the
epoch): the session actor calls them with what it already has in hand (the
packets of a read, the core's effects, a CONNECT) and sends the records to
the storage actor. The reverse direction (:func:`message_of`,
:func:`subscription_of`) rebuilds what the session core holds from records
read back.

Which records a session writes (docs/storage.md, "Durable sessions"):

=========================================  ======================================
client PUBLISH QoS 1/2 accepted            ``PublishAccepted`` (every session; PUBACK /
                                           PUBREC after it is stored)
client PUBLISH QoS 0, Will at QoS 0        ``PublishAccepted`` with ``[storage] log_qos0``
                                           only; nothing waits for it
CONNECT accepted / connection ended        ``SessionConnected`` (+ ``WillSet``) /
                                           ``SessionDisconnected`` (every session;
                                           :func:`disconnect_cause` of the close)
SUBSCRIBE granted / UNSUBSCRIBE            ``Subscribed`` / ``Unsubscribed`` (every
                                           session; SUBACK / UNSUBACK after it)
Will published / discarded                 ``WillSent`` / ``WillCleared``
state discarded (expiry, clean start)      ``SessionExpired``
PUBLISH QoS 1/2 to the client (not DUP)    ``OutboundSent``          durable sessions
first PUBLISH never written (closed)       ``OutboundUnsent``        only: the packets
PUBACK / PUBREC / PUBCOMP from the client  ``PubAckReceived`` ...    after them wait
PUBREL from the client                     ``PubRelReceived``        until they are stored
a logged message dropped for the client    ``SessionDropped``
shared messages handed back to the group   ``SessionDropped`` (durable) + ``SharedPending``,
                                           in one append
=========================================  ======================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from actorbroker.codec import (
    NO_PROPERTIES,
    Connect,
    Packet,
    Properties,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    ReasonCode,
    Subscription,
    Will,
)
from actorbroker.codec import Publish as PublishPacket
from actorbroker.codec.properties import WILL_PROPERTIES
from actorbroker.codec.property_codec import decode_properties, encode_properties
from actorbroker.persistence.records import (
    DisconnectCause,
    OutboundSent,
    SessionQueued,
    PubAckReceived,
    PubCompReceived,
    PublishAccepted,
    PubRecReceived,
    PubRelReceived,
    Record,
    RetainedSet,
    SessionConnected,
    SessionDropped,
    SharedPending,
    Subscribed,
    WillSet,
)
from actorbroker.session import AppMessage

__all__ = [
    "PUBLISH_CONTEXT",
    "ack_records",
    "blob_of",
    "connected_record",
    "disconnect_cause",
    "handed_back_records",
    "message_of",
    "options_of",
    "properties_of",
    "publish_record",
    "queued_records",
    "sent_records",
    "subscribed_records",
    "subscription_of",
    "will_of",
    "will_record",
]

#: Property context of a PUBLISH (its packet type), as the codec names contexts.
PUBLISH_CONTEXT = 3


def blob_of(properties: Properties, context: int = PUBLISH_CONTEXT) -> bytes:
    """MQTT 5 properties in their wire form, b"" for none (MQTT 3)."""
    if properties is NO_PROPERTIES or properties == NO_PROPERTIES:
        return b""
    return encode_properties(properties, context)


def properties_of(blob: bytes, context: int = PUBLISH_CONTEXT) -> Properties:
    """The properties a BLOB of :func:`blob_of` holds."""
    if not blob:
        return NO_PROPERTIES
    properties, _ = decode_properties(blob, 0, len(blob), context)
    return properties


# -- messages -----------------------------------------------------------------------


def publish_record(message: AppMessage, packet_id: int | None, ts: int) -> PublishAccepted:
    """The ``PublishAccepted`` record of an accepted message (a Will: ``packet_id`` None)."""
    return PublishAccepted(
        message.topic, message.payload, message.qos, message.retain, blob_of(message.properties),
        message.publisher or "", packet_id or 0, timestamp_us=ts,
    )


def message_of(record: Record, offset: int, *, now: float, wall: float) -> AppMessage | None:
    """The message a ``PublishAccepted`` or ``RetainedSet`` record holds, None for other records.

    ``received_at`` is put back on the monotonic clock (``now``) from the
    record's wall-clock time (``wall``: seconds since the epoch, read
    together with ``now``), so that an MQTT 5 Message Expiry Interval keeps
    counting across a restart.
    """
    if isinstance(record, PublishAccepted):
        retain = record.retain
    elif isinstance(record, RetainedSet):
        retain = True
    else:
        return None
    received_at = now - max(0.0, wall - record.timestamp_us / 1e6)
    return AppMessage(record.topic, record.payload, record.qos, retain,
                      properties_of(record.properties), record.client_id or None, received_at,
                      0, offset)


# -- connections and subscriptions --------------------------------------------------


def connected_record(client_id: str, connect: Connect, *, expiry: int, present: bool,
                     peer: str, ts: int, owner: str | None = None) -> SessionConnected:
    """``SessionConnected`` for an accepted CONNECT; ``expiry`` is the interval in force.

    Its user name is the session's owner: the CONNECT's, or ``owner`` when
    another user took the session over (``[auth] takeover_users``)."""
    return SessionConnected(
        client_id, connect.protocol_level, connect.clean_start, present, expiry,
        connect.keepalive, connect.username or "" if owner is None else owner, peer,
        timestamp_us=ts,
    )


_R, _C = ReasonCode, DisconnectCause
#: The cause of the codes that name one; any other code from 0x80 up is the peer's error.
_CAUSES: dict[int, DisconnectCause] = {
    _R.NORMAL_DISCONNECTION: _C.CLIENT_DISCONNECT,
    _R.DISCONNECT_WITH_WILL_MESSAGE: _C.CLIENT_DISCONNECT,
    _R.KEEP_ALIVE_TIMEOUT: _C.KEEPALIVE_TIMEOUT,
    _R.SESSION_TAKEN_OVER: _C.TAKEN_OVER,
    _R.SERVER_SHUTTING_DOWN: _C.SERVER_SHUTDOWN,
    _R.USE_ANOTHER_SERVER: _C.SERVER_SHUTDOWN,  # a shutdown's farewell may send clients on
    _R.SERVER_MOVED: _C.SERVER_SHUTDOWN,
    _R.ADMINISTRATIVE_ACTION: _C.ADMINISTRATIVE,
    _R.NOT_AUTHORIZED: _C.NOT_AUTHORIZED,
    _R.BAD_USER_NAME_OR_PASSWORD: _C.NOT_AUTHORIZED,
    _R.BANNED: _C.NOT_AUTHORIZED,
    _R.BAD_AUTHENTICATION_METHOD: _C.NOT_AUTHORIZED,
    # The broker's own failure or limit, not the peer's error: no cause of the list fits
    # (the record's reason code and text say which).
    _R.UNSPECIFIED_ERROR: _C.UNKNOWN,
    _R.IMPLEMENTATION_SPECIFIC_ERROR: _C.UNKNOWN,
    _R.SERVER_UNAVAILABLE: _C.UNKNOWN,
    _R.SERVER_BUSY: _C.UNKNOWN,
    _R.CONNECTION_RATE_EXCEEDED: _C.UNKNOWN,
    _R.MAXIMUM_CONNECT_TIME: _C.UNKNOWN,
}


def disconnect_cause(code: int | None) -> DisconnectCause:
    """The ``SessionDisconnected`` cause of a connection closed with reason ``code``.

    ``code`` is the MQTT 5 reason code of whoever decided the close (the
    session's ``Close`` or the transport's ``ConnectionLost.code``, for
    every protocol version); None when nobody did: the socket just went.
    """
    if code is None:
        return _C.CONNECTION_LOST
    cause = _CAUSES.get(code)
    if cause is not None:
        return cause
    return _C.PROTOCOL_ERROR if code >= _R.UNSPECIFIED_ERROR else _C.UNKNOWN


def will_record(client_id: str, will: Will, delay: int, ts: int) -> WillSet:
    """``WillSet`` for the Will of a CONNECT."""
    return WillSet(client_id, will.topic, will.payload, will.qos, will.retain,
                   blob_of(will.properties, WILL_PROPERTIES), delay, timestamp_us=ts)


def will_of(record: WillSet) -> Will:
    """The Will a ``WillSet`` holds."""
    return Will(record.topic, record.payload, record.qos, record.retain,
                properties_of(record.properties, WILL_PROPERTIES))


def options_of(sub: Subscription) -> int:
    """The MQTT 5 subscription options byte of ``sub`` (bits 0-1 QoS, 2 NL, 3 RAP, 4-5 RH)."""
    return (sub.qos & 3) | (0x04 if sub.no_local else 0) | (
        0x08 if sub.retain_as_published else 0) | ((sub.retain_handling & 3) << 4)


def subscription_of(topic_filter: str, options: int) -> Subscription:
    """The :class:`Subscription` an options byte describes."""
    return Subscription(topic_filter, options & 3, bool(options & 0x04), bool(options & 0x08),
                        (options >> 4) & 3)


def subscribed_records(client_id: str, granted: Iterable[Subscription], ts: int,
                       subscription_id: int = 0) -> list[Record]:
    """One ``Subscribed`` per granted subscription."""
    return [Subscribed(client_id, sub.topic_filter, options_of(sub), subscription_id,
                       timestamp_us=ts) for sub in granted]


# -- delivery state of durable sessions ---------------------------------------------


def ack_records(client_id: str, packet: Packet, ts: int) -> Record | None:
    """The record of an acknowledgement from the client, None for other packets."""
    kind = type(packet)
    if kind is PubAck:
        assert isinstance(packet, PubAck)
        return PubAckReceived(client_id, packet.packet_id, timestamp_us=ts)
    if kind is PubRec:
        assert isinstance(packet, PubRec)
        if packet.reason_code >= 0x80:  # MQTT 5: refused, the flow ends here
            return PubCompReceived(client_id, packet.packet_id, timestamp_us=ts)
        return PubRecReceived(client_id, packet.packet_id, timestamp_us=ts)
    if kind is PubComp:
        assert isinstance(packet, PubComp)
        return PubCompReceived(client_id, packet.packet_id, timestamp_us=ts)
    if kind is PubRel:
        assert isinstance(packet, PubRel)
        return PubRelReceived(client_id, packet.packet_id, timestamp_us=ts)
    return None


def sent_records(client_id: str, packets: Iterable[Packet],
                 flights: Callable[[], Mapping[int, tuple[object, object]]], ts: int
                 ) -> list[Record]:
    """``OutboundSent`` for each first send of a QoS 1/2 PUBLISH of a logged message.

    ``flights()`` is the core's inflight view (packet id -> (Delivery,
    state)); it is read only when there is such a PUBLISH. Resends (DUP)
    were journaled when first sent; the DUP=0 resend of a flow never written
    before (``OutboundUnsent``) is its first send, journaled again.
    """
    out: list[Record] = []
    view: Mapping[int, tuple[object, object]] | None = None
    for packet in packets:
        if type(packet) is not PublishPacket:
            continue
        assert isinstance(packet, PublishPacket)
        if not packet.qos or packet.dup or packet.packet_id is None:
            continue
        if view is None:
            view = flights()
        found = view.get(packet.packet_id)
        if found is None:
            continue
        delivery = found[0]
        message = getattr(delivery, "message", None)
        offset = getattr(message, "log_offset", -1)
        if offset < 0:
            continue  # not in the log (storage came up after it): cannot be journaled
        out.append(OutboundSent(client_id, packet.packet_id, offset, packet.qos, packet.retain,
                                tuple(getattr(delivery, "subscription_ids", ())),
                                timestamp_us=ts))
    return out


def queued_records(client_id: str, deliveries: Iterable[object], ts: int) -> list[Record]:
    """``SessionQueued`` for each QoS 1/2 delivery of a logged message a session holds."""
    out: list[Record] = []
    for delivery in deliveries:
        message = getattr(delivery, "message", None)
        qos = getattr(delivery, "qos", 0)
        offset = getattr(message, "log_offset", -1)
        if qos and offset >= 0:
            out.append(SessionQueued(client_id, offset, qos, getattr(delivery, "retain", False), (),
                                     getattr(message, "topic", ""), getattr(message, "size", 0),
                                     timestamp_us=ts))
    return out


def handed_back_records(client_id: str, handed: Iterable[tuple[str, AppMessage]], durable: bool,
                        ts: int) -> list[Record]:
    """A member hands logged messages back to their shared groups: for each ``(group,
    message)``, out of a durable member's queue (``SessionDropped``) and owed by the group
    again (``SharedPending``).

    Both go in one append: the member's drop alone, stored without the
    group's debt (a stop between two appends did that), loses the message.
    """
    out: list[Record] = []
    for group, message in handed:
        if message.log_offset < 0:
            continue
        if durable:
            out.append(SessionDropped(client_id, message.log_offset, "shared_handed_back",
                                      timestamp_us=ts))
        out.append(SharedPending(group, message.log_offset, message.qos, message.retain,
                                 message.topic, message.size, timestamp_us=ts))
    return out
