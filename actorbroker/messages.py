"""Messages layer: actor messages shared by transport and actors. Imports the stdlib and actorbroker.codec only.

Every message is a frozen slotted dataclass (never a dict); commands are
imperative, notifications past tense (docs/style.md). Dispatch with ``match``::

    match message:
        case Inbound(conn_id, packets, credit): ...
        case ConnectionLost(conn_id, reason, graceful, code): ...
        case Drained(conn_id): ...

The transport (:mod:`actorbroker.transport`) sends the three below to the
session port that :meth:`Gateway.connect` returned; see
:mod:`actorbroker.transport.gateway` for when and in which order. Others add
more messages here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from actorbroker.codec import Packet
from actorbroker.codec.frozen import quick_init

__all__ = ["ConnectionLost", "Drained", "Inbound", "ReadCredit"]


def _returned(_credit: ReadCredit) -> None:
    """What a credit calls once it went back: nothing (it goes back once)."""


class ReadCredit:
    """The read credit of one ``Inbound``, back to its connection once what it routed was taken.

    Not a message: a counter that travels with the read's messages (loop
    thread only, like everything that touches it). The transport makes it
    with one hold, the receiver's. Whoever hands the read's messages on adds
    one hold per message it told (:meth:`hold`) before giving back its own
    (:meth:`take`); a subscriber's session takes its hold once the delivery
    is in its queue below the high-water mark (docs/architecture.md,
    "Backpressure"). The last :meth:`take` gives the credit back to the
    connection, which may then read again. :meth:`expire` gives it back
    early (the transport's time bound): later holds and takes are no-ops for
    the connection.
    """

    __slots__ = ("_back", "born", "conn_id", "left")

    def __init__(self, back: Callable[[ReadCredit], None], conn_id: int, born: float) -> None:
        self._back = back
        #: The connection that read it (a session never holds back its own client: the
        #: acknowledgements that would free it come through the same socket).
        self.conn_id = conn_id
        #: The loop time of the read (the transport's time bound counts from it).
        self.born = born
        #: Holds outstanding; the credit goes back when the last is taken.
        self.left = 1

    def hold(self, count: int) -> None:
        """``count`` more holders (messages told that carry this credit)."""
        self.left += count

    def take(self) -> None:
        """One holder is done; the last gives the credit back to the connection."""
        left = self.left - 1
        self.left = left
        if left == 0:
            self.expire()

    def expire(self) -> None:
        """Give the credit back now, whatever holds are left (at most once)."""
        back, self._back = self._back, _returned
        back(self)

    def __repr__(self) -> str:
        return f"<ReadCredit left={self.left}>"


@quick_init
@dataclass(frozen=True, slots=True)
class Inbound:
    """The packets of one read from connection ``conn_id``, in order.

    One message per read, never one per packet. ``credit`` is the read's
    :class:`ReadCredit`: the receiver takes its hold once it has processed
    the read and handed its messages on with the credit (or calls
    ``conn.batch_done()`` if it hands nothing on): the transport stops
    reading from a connection that has too many reads outstanding.
    """

    conn_id: int
    packets: tuple[Packet, ...]
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """Connection ``conn_id`` has ended; told exactly once, after its last Inbound.

    ``graceful`` is True when the client sent DISCONNECT (the packet came in
    the last Inbound) or when ``conn.close()`` was called on the server
    side; False for everything else (network error, EOF without DISCONNECT,
    keepalive expiry, protocol violation, output overflow). ``reason`` is a
    human-readable cause for logs, e.g. ``"keepalive timeout"`` or the
    protocol error's message with its rule id. ``code`` is the MQTT 5 reason
    code of whoever decided the close, whatever the client's version: 0x00
    the client's DISCONNECT, 0x8D keepalive, the protocol error's code, or
    the one given to ``conn.close()`` (0x8B shutdown, 0x98 an operator's
    kick); None when nobody decided it (the socket went, the output
    overflowed, ``close()`` without a code). The session journals its cause
    from it (:func:`actorbroker.durable.journal.disconnect_cause`).
    """

    conn_id: int
    reason: str
    graceful: bool
    code: int | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class Drained:
    """Connection ``conn_id``, reported congested earlier, can take more output.

    Told once per congestion episode, and only if ``conn.congested`` was
    read as True during it: the session may now send what it held back.
    """

    conn_id: int
