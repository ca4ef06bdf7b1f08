"""Ports layer: the contract between the transport and the session actors. Imports the stdlib and actorbroker.codec only.

Both sides import this module and nothing of each other: the messages the
transport tells a session (:class:`Inbound`, :class:`Drained`,
:class:`ConnectionLost`, with the read's :class:`ReadCredit`) and, as
Protocols, the roles each side plays. Nothing here runs.

The messages
------------

Every message is a frozen slotted dataclass (never a dict); commands are
imperative, notifications past tense (docs/style.md). Dispatch with ``match``::

    match message:
        case Inbound(conn_id, packets, credit): ...
        case ConnectionLost(conn_id, reason, graceful, code): ...
        case Drained(conn_id): ...

The transport (:mod:`actorbroker.transport`) sends the three below to the
session port that :meth:`Gateway.connect` returned; the roles below say
when and in which order.

The roles
---------

Three roles:

``Gateway`` (implemented by the app/actors, passed to ``start_listener``)
    ``gateway.connect(conn, connect) -> SessionPort | None`` is called once
    per connection, synchronously on the loop thread, when its CONNECT packet
    arrives (valid: the codec parsed it; nothing before it). It finds or
    starts the session of ``connect.client_id`` (an empty id is the
    gateway's to assign) and hands it the connection, e.g. by telling it
    ``Attach(conn, connect)``, then returns the session's port.

    Refusing synchronously (banned, server busy): queue the CONNACK with the
    refusal code (``conn.send([ConnAck(False, code)])``), call
    ``conn.close()`` and return None. Nothing more reaches the gateway
    about that connection. A session may also refuse later (asynchronous
    authentication): it sends the refusing CONNACK itself and closes.

    It must not raise; if it does, the transport logs the traceback and
    closes the connection (v5: CONNACK 0x80).

``SessionPort`` (anything with ``tell``; a pykka ``ActorRef`` fits)
    Receives, in this order and only from the loop thread:

    * ``Inbound(conn_id, packets, credit)``: one per read, the packets of
      that read in order (a tuple, never empty), and the read's
      ``ReadCredit`` (above). The receiver takes the
      credit's hold once it processed the read, after handing its messages
      on with the credit (whoever holds them holds the credit too; a
      receiver that hands nothing on may call ``conn.batch_done()``
      instead). With ``max_batches`` (default 4) credits outstanding the
      transport stops reading that socket, so a publisher faster than its
      subscribers is slowed by TCP, not buffered in memory. A credit still
      held after ``credit_timeout`` is back all the same.
    * ``Drained(conn_id)``: the connection, seen congested, takes output
      again (see ``congested``).
    * ``ConnectionLost(conn_id, reason, graceful, code)``: exactly once, last,
      however the connection ends, including after ``conn.close()``.
      ``graceful`` is True if the client sent DISCONNECT (the packet is in
      the last Inbound: a v5 reason 0x04 still asks for the will) or if
      ``conn.close()`` was called; the will decision is the session's.
      ``code`` is the reason code of whoever decided the close (None: the
      socket went); see :class:`ConnectionLost`.

    Before CONNACK: packets that follow the CONNECT (a client may pipeline
    them) are held by the transport and delivered as one Inbound right after
    the session sends a successful CONNACK; dropped if it refuses
    ([MQTT-3.1.4-5]). AUTH (v5 enhanced authentication) and DISCONNECT are
    delivered at once. A v5 client that named an Authentication Method and
    sends anything else before CONNACK is disconnected ([MQTT-3.1.2-30]).
    If ``tell`` raises (a dead actor), the transport closes the connection.

``Connection`` (implemented here, used by the session)
    Not an actor: connections are monitored (ConnectionLost), not
    supervised. **Every method and property must be called on the loop
    thread** (loop actors run there; a ThreadActor must hop onto the loop
    with ``loop.call_soon_threadsafe``). No method raises for peer or
    network reasons; after the connection has ended they are no-ops.

    * ``conn_id``: unique int for the life of the process; ``peer``:
      (host, port) of the client; ``protocol_level``: 3, 4 or 5 (None until
      CONNECT); ``client_id``: the CONNECT's id (the gateway may replace an
      empty one by assigning to it); ``identity``: on a TLS listener with
      use_identity_as_username, the user the verified client certificate
      names (CN, else first subjectAltName), known before CONNECT arrives;
      the gateway makes it the CONNECT's user name, in place of the
      client's user name and password. None otherwise.
    * ``send(packets)``: encode with the connection's protocol level and
      queue; all output queued in one loop tick goes out in one socket
      write. Sending a CONNACK is what the transport watches for: success
      moves the connection to CONNECTED (held packets are delivered),
      a refusal code closes it after the flush ([MQTT-3.2.2-7]).
      ``send_bytes(data)``: the same for pre-encoded packets (e.g. one
      PUBLISH encoded once for many subscribers of the same level).
    * ``congested``: True when output is backing up (the socket paused us,
      or more than the high-water mark is buffered). The session should
      then drop QoS 0 messages (and count them) and keep QoS 1/2 in its
      queue until ``Drained``. A session that keeps sending while more
      than ``max_output`` bytes are buffered gets the connection closed
      (abnormally): memory per connection stays bounded.
      ``buffered_bytes``: output queued and not yet taken by the kernel.
    * ``batch_done()``: the oldest Inbound was processed and nothing of it
      handed on: its credit is back (see above).
    * ``close(reason_code=None, reason="")``: flush queued output, then for
      a v5 client with a reason code: DISCONNECT with it (or, before any
      CONNACK, a CONNACK with it); then close the socket. Idempotent.
      Tells ConnectionLost(graceful=True, code=reason_code) unless the
      connection already ended.
    * ``set_keepalive(seconds)``: enforce 1.5 x ``seconds`` of silence as
      the limit ([MQTT-3.1.2-24]); 0 disables. The transport applies the
      CONNECT's keepalive by itself; the session calls this to apply a
      v5 Server Keep Alive. Any packet received restarts the period; time
      spent with reading paused by the broker does not count. On expiry:
      v5 DISCONNECT 0x8D, then close; ConnectionLost(graceful=False).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from actorbroker.codec import Connect, Packet
from actorbroker.codec.frozen import quick_init

__all__ = ["Connection", "ConnectionLost", "Drained", "Gateway", "Inbound", "ReadCredit",
           "SessionPort"]


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


@runtime_checkable
class SessionPort(Protocol):
    """Where a connection's messages go: ``Inbound``, ``Drained``, ``ConnectionLost``."""

    def tell(self, message: Any) -> None:
        """Queue ``message`` for the session; must not block."""


class Connection(Protocol):
    """One client connection as the session sees it (loop thread only)."""

    @property
    def conn_id(self) -> int:
        """Unique id of this connection within the process."""

    @property
    def peer(self) -> tuple[str, int]:
        """(host, port) of the client."""

    @property
    def protocol_level(self) -> int | None:
        """3, 4 or 5 once CONNECT has arrived, else None."""

    client_id: str | None
    """The CONNECT's client id (None before CONNECT); the gateway may assign one."""

    identity: str | None
    """The user a verified client certificate names, on a TLS listener with
    use_identity_as_username; None otherwise."""

    def send(self, packets: Iterable[Packet]) -> None:
        """Encode ``packets`` and queue them; flushed with one write per loop tick."""

    def send_bytes(self, data: bytes) -> None:
        """Queue already encoded packets (whole packets only)."""

    @property
    def congested(self) -> bool:
        """True when the session should hold back output (drop QoS 0, queue QoS 1/2)."""

    @property
    def buffered_bytes(self) -> int:
        """Output queued here and in the socket transport, not yet sent."""

    @property
    def closed(self) -> bool:
        """True once the connection has ended or is closing."""

    def batch_done(self) -> None:
        """The oldest Inbound was processed, nothing handed on: its read credit is back."""

    def close(self, reason_code: int | None = None, reason: str = "",
              properties: Any = None) -> None:
        """Flush, say goodbye (v5 DISCONNECT/CONNACK with ``reason_code`` and
        ``properties``), close. Idempotent."""

    def set_keepalive(self, seconds: int) -> None:
        """Close after 1.5 x ``seconds`` without a packet from the client; 0 disables."""


class Gateway(Protocol):
    """Turns an accepted CONNECT into a session port (app side)."""

    def connect(self, conn: Connection, packet: Connect) -> SessionPort | None:
        """Attach ``conn`` to the session of ``packet.client_id``; None if refused.

        Called on the loop thread; must not block or raise. On None the
        gateway has queued a refusing CONNACK and called ``conn.close()``.
        """
