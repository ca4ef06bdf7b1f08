"""Persistence layer: the commit log records of delivery state (queues, flows in flight, shared groups). Imports the stdlib only.

Part of the record format (:mod:`.records` re-exports these classes and
lists them in ``RECORD_TYPES``): what a durable session holds for delivery,
and where a shared subscription's message went. docs/storage.md has the
byte layouts and the fold's rules.
"""

from __future__ import annotations

from typing import ClassVar

from .record_base import CLIENT as _CLIENT
from .record_base import PACKET_ID as _PACKET_ID
from .record_base import SUB_IDS as _SUB_IDS
from .record_base import Record, record
from .wire import Kind, wire

__all__ = ["OutboundSent", "OutboundUnsent", "PubAckReceived", "PubCompReceived", "PubRecReceived",
           "PubRelReceived", "SessionCursor", "SessionDropped", "SessionQueued", "SharedPending",
           "SharedRouted"]


@record
class SessionQueued(Record):
    """The message logged at ``offset`` waits in the session's queue."""

    TYPE: ClassVar[int] = 20
    client_id: str = wire(Kind.TEXT, _CLIENT)
    offset: int = wire(Kind.U64, "log offset of the PublishAccepted")
    qos: int = wire(Kind.U8, "delivery QoS (after downgrade)", default=0, maximum=2)
    retain: bool = wire(Kind.BOOL, "RETAIN flag to send", default=False)
    subscription_ids: tuple[int, ...] = wire(Kind.U32_LIST, _SUB_IDS, default=())
    topic: str = wire(Kind.TEXT, "topic of the message (empty: unknown)", default="", appended=True)
    size: int = wire(Kind.U32, "payload bytes of the message", default=0, appended=True)


@record
class SessionDropped(Record):
    """The message at ``offset`` will not be delivered to the session (a queue limit, expiry)."""

    TYPE: ClassVar[int] = 27
    client_id: str = wire(Kind.TEXT, _CLIENT)
    offset: int = wire(Kind.U64, "log offset of the PublishAccepted")
    reason: str = wire(Kind.TEXT, "why, as counted in $SYS (queue_full, expired, ...)", default="")


@record
class SessionCursor(Record):
    """Every queue entry of the session below ``offset`` has left the queue."""

    TYPE: ClassVar[int] = 21
    client_id: str = wire(Kind.TEXT, _CLIENT)
    offset: int = wire(Kind.U64, "queue entries below this offset are done")


@record
class OutboundSent(Record):
    """A QoS 1/2 PUBLISH of the message at ``offset`` went out with ``packet_id``.

    It stays in flight until PubAckReceived (QoS 1) or PubCompReceived
    (QoS 2); after a restart it is sent again with DUP set, unless a
    PubRecReceived moved it to the PUBREL stage.
    """

    TYPE: ClassVar[int] = 22
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)
    offset: int = wire(Kind.U64, "log offset of the PublishAccepted")
    qos: int = wire(Kind.U8, "delivery QoS, 1 or 2", default=1, maximum=2)
    retain: bool = wire(Kind.BOOL, "RETAIN flag sent", default=False)
    subscription_ids: tuple[int, ...] = wire(Kind.U32_LIST, _SUB_IDS, default=())


@record
class OutboundUnsent(Record):
    """The PUBLISH of the flow ``packet_id`` (its ``OutboundSent``) was never written: the
    connection ended first.

    Its next send is the first attempt, with DUP=0 ([MQTT-3.3.1-1]); that
    send's ``OutboundSent`` (under the same packet id) clears the mark. Lost
    in a crash, it costs a DUP=1 on a message the client never had.
    """

    TYPE: ClassVar[int] = 32
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)


@record
class PubAckReceived(Record):
    """The client acknowledged an outbound QoS 1 PUBLISH: the flow is done."""

    TYPE: ClassVar[int] = 23
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)


@record
class PubRecReceived(Record):
    """The client received an outbound QoS 2 PUBLISH: PUBREL stage, never resend it."""

    TYPE: ClassVar[int] = 24
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)


@record
class PubCompReceived(Record):
    """The client completed an outbound QoS 2 flow: the packet id is free."""

    TYPE: ClassVar[int] = 25
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)


@record
class PubRelReceived(Record):
    """The client released an inbound QoS 2 message (PUBREL): its packet id is free."""

    TYPE: ClassVar[int] = 26
    client_id: str = wire(Kind.TEXT, _CLIENT)
    packet_id: int = wire(Kind.U16, _PACKET_ID)


@record
class SharedRouted(Record):
    """Shared subscription ``group`` gave the message at ``offset`` to ``client_id``.

    Written by the router (a topic actor, or the registry handing a message
    on) before the member's session hears of it; an empty ``client_id``: no
    member could take it. For a durable member it queues the message as
    ``SessionQueued`` does; either way the group no longer owes it.
    """

    TYPE: ClassVar[int] = 28
    group: str = wire(Kind.TEXT, "the whole shared filter, $share/{group}/{filter}")
    client_id: str = wire(Kind.TEXT, "the member chosen; empty for none")
    offset: int = wire(Kind.U64, "log offset of the PublishAccepted")
    qos: int = wire(Kind.U8, "delivery QoS (after downgrade)", default=0, maximum=2)
    retain: bool = wire(Kind.BOOL, "RETAIN flag to send", default=False)
    subscription_ids: tuple[int, ...] = wire(Kind.U32_LIST, _SUB_IDS, default=())
    topic: str = wire(Kind.TEXT, "topic of the message", default="")
    size: int = wire(Kind.U32, "payload bytes of the message", default=0)


@record
class SharedPending(Record):
    """Shared subscription ``group`` owes the message at ``offset`` (again): a member handed
    it back, or a checkpoint restates what the group owes."""

    TYPE: ClassVar[int] = 29
    group: str = wire(Kind.TEXT, "the whole shared filter, $share/{group}/{filter}")
    offset: int = wire(Kind.U64, "log offset of the PublishAccepted")
    qos: int = wire(Kind.U8, "QoS as published", default=0, maximum=2)
    retain: bool = wire(Kind.BOOL, "RETAIN flag as published", default=False)
    topic: str = wire(Kind.TEXT, "topic of the message", default="")
    size: int = wire(Kind.U32, "payload bytes of the message", default=0)
