"""Messages layer: actor messages shared by transport and actors. Imports the stdlib and actorbroker.codec only.

Every message is a frozen slotted dataclass (never a dict); commands are
imperative, notifications past tense (STYLE.md). Dispatch with ``match``::

    match message:
        case Inbound(conn_id, packets): ...
        case ConnectionLost(conn_id, reason, graceful): ...
        case Drained(conn_id): ...

The transport (:mod:`actorbroker.transport`) sends the three below to the
session port that :meth:`Gateway.connect` returned; see
:mod:`actorbroker.transport.gateway` for when and in which order. Others add
more messages here.
"""

from __future__ import annotations

from dataclasses import dataclass

from actorbroker.codec import Packet
from actorbroker.codec.frozen import quick_init

__all__ = ["ConnectionLost", "Drained", "Inbound"]


@quick_init
@dataclass(frozen=True, slots=True)
class Inbound:
    """The packets of one read from connection ``conn_id``, in order.

    One message per read, never one per packet. The receiver calls
    ``conn.batch_done()`` once it has processed it: the transport stops
    reading from a connection that has too many batches outstanding.
    """

    conn_id: int
    packets: tuple[Packet, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """Connection ``conn_id`` has ended; told exactly once, after its last Inbound.

    ``graceful`` is True when the client sent DISCONNECT (the packet came in
    the last Inbound) or when ``conn.close()`` was called on the server
    side; False for everything else (network error, EOF without DISCONNECT,
    keepalive expiry, protocol violation, output overflow). ``reason`` is a
    human-readable cause for logs, e.g. ``"keepalive timeout"`` or the
    protocol error's message with its rule id.
    """

    conn_id: int
    reason: str
    graceful: bool


@quick_init
@dataclass(frozen=True, slots=True)
class Drained:
    """Connection ``conn_id``, reported congested earlier, can take more output.

    Told once per congestion episode, and only if ``conn.congested`` was
    read as True during it: the session may now send what it held back.
    """

    conn_id: int
