"""Actors layer: a session's deliveries and writes, a session actor's component. Stdlib, codec, session.

``Deliver`` (a topic actor's or the registry's batch for this session) is
the hot path of fan-out: in the ``routes`` benchmark every publish becomes
6.3 of them, each to a different session, so what one costs is paid per
delivery. The common case, live QoS 0 messages for an attached client
whose output flows, takes the core's fast path
(``SessionCore.deliver_now``): the PUBLISHes come back as packets, no
effects, and each is the message's shared one, which the transport encodes
once for all its subscribers. With storage on, the packets still pass
through the journal's ``intercept`` as one ``Send`` (output held behind
earlier effects waiting for the commit log stays in order), and the
messages through its ``deliverable`` first (a resumed queue goes before
them); without, neither call is made: :class:`Output` binds its ``send_now``
once, and the actor its ``_deliver`` (actors/session_durable.py,
``_journal_init``), to the ``_direct`` or ``_journaled`` variants below:
a Deliver costs one call into this module, no more. Anything else
(QoS 1/2, a held or congested output, an expired message, MQTT 5 aliases
or size limits) goes through ``SessionCore.deliver`` and its effects; a
big batch goes out in chunks of :data:`CHUNK`, watching congestion.

A QoS 1/2 PUBLISH written to a connection that had closed already (it
drops it) is reported to the core as never sent (``SessionCore.unsent``),
so that its resend is a first send, DUP=0; so are those held for the
commit log when the connection ends (``LogJournal.held_for``).

Counting: every PUBLISH written counts in ``publish_sent``; the MQTT 3.x
retransmission timer is armed (:mod:`.retransmit`) when a PUBLISH goes
out while QoS 1/2 flows are in flight.

An :class:`Output` holds its session's core, journal and metrics, and the
actor as a :class:`~.host.SessionHost`: the attached ``connection`` and
the ``epoch`` (plain attributes, read without a call), the read ``credit``,
``carry_out`` for what the journal lets through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from actorbroker.codec import Packet, Publish
from actorbroker.metrics import BrokerMetrics
from actorbroker.session import Effect, Send, SessionCore

from ..messages import Deliver
from .host import SessionHost
from .journal.interface import Journal
from .journal.memory import MemoryJournal
from .retransmit import Retransmitter

__all__ = ["CHUNK", "Output"]

#: Deliveries written per conn.send while a big batch or a drained queue goes out.
CHUNK = 64


class Output:
    """What a session actor does with a ``Deliver`` and with packets to write (see the module doc).

    ``run`` carries the core's effects out (the actor's, through the journal
    if it may hold them); ``clock`` is the loop's time(), bound.
    """

    __slots__ = ("_clock", "_core", "_host", "_journal", "_metrics", "_retransmission",
                 "_retransmitter", "_run", "deliver", "send_now")

    def __init__(self, host: SessionHost, core: SessionCore, journal: Journal,
                 metrics: BrokerMetrics, retransmitter: Retransmitter,
                 run: Callable[[list[Effect]], None], clock: Callable[[], float]) -> None:
        self._host = host
        self._core = core
        self._journal = journal
        self._metrics = metrics
        self._retransmitter = retransmitter
        self._retransmission = retransmitter.retransmission
        self._run = run
        self._clock = clock
        # Bound once, through the journal only if it may hold them (see the module doc).
        direct = isinstance(journal, MemoryJournal)
        #: Take a ``Deliver``: the actor binds this, one call per Deliver.
        self.deliver: Callable[[Deliver], None] = (
            self.deliver_direct if direct else self.deliver_journaled)
        #: Write the QoS 0 PUBLISHes of ``SessionCore.deliver_now``.
        self.send_now: Callable[[list[Packet]], None] = (
            self._write_now if direct else self._send_journaled)

    def close(self) -> None:
        """The actor stopped: let go of it and of its bound effect path (each a reference
        cycle through the actor), so that reference counting frees an ended session at once.
        Once more does nothing (the actor cleans up once per stop or crash, maybe both)."""
        for name in ("_host", "_run", "deliver", "send_now"):
            if hasattr(self, name):
                delattr(self, name)

    def deliver_journaled(self, message: Deliver) -> None:
        """A ``Deliver`` with storage on: what the journal lets go to the core now (the rest
        joins a resumed queue, or a hibernated session counts it), then as without."""
        if message.epoch == self._host.epoch:  # (stale ones are counted as without)
            messages = message.messages
            admitted = self._journal.deliverable(messages, message.qos)
            if admitted is not messages:
                if not admitted:
                    return
                message = Deliver(admitted, message.qos, message.epoch, message.credit)
        self.deliver_direct(message)

    def deliver_direct(self, message: Deliver) -> None:
        """A ``Deliver`` to the core, and its output written (see the module doc)."""
        host = self._host
        if message.epoch != host.epoch:
            # For subscriptions of a session state that was discarded (their removal
            # is on its way): lost with that state, as the core counts its queue.
            self._metrics.drop("session_ended", len(message.messages), client_id=host.client_id,
                               topic=message.messages[0].topic)
            return
        core, qos, now = self._core, message.qos, self._clock()
        conn = host.connection
        if conn is not None and not core.output_held and conn.congested:
            core.hold_output()  # the socket is backed up: queue (within the limits) until Drained
        messages = message.messages
        if conn is not None and len(messages) <= CHUNK:
            packets = core.deliver_now(messages, qos, now)
            if packets is not None:
                self.send_now(packets)
                return
        if len(messages) == 1:
            self._run(core.deliver(messages[0], qos, now))
            return
        effects: list[Effect] = []
        for index, item in enumerate(messages, 1):
            effects += core.deliver(item, qos, now)
            if index % CHUNK == 0 and conn is not None and not core.output_held:
                self._run(effects)  # a big batch goes out in chunks, watching congestion
                effects = []
                if conn.congested:
                    core.hold_output()
        self._run(effects)

    def _send_journaled(self, packets: list[Packet]) -> None:
        """``send_now`` with storage on: through the journal, which may hold them."""
        send = Send(tuple(packets))
        host = self._host
        effects = self._journal.intercept([send], host.connection, host.credit)
        if len(effects) != 1 or effects[0] is not send:
            host.carry_out(effects)  # held behind earlier output, or more came with it
            return
        self._write_now(packets)

    def _write_now(self, packets: list[Packet]) -> None:
        """Write the QoS 0 PUBLISHes of ``SessionCore.deliver_now`` (an attached connection):
        ``send_now`` without storage."""
        conn = self._host.connection
        assert conn is not None  # deliver_now's packets are for an attached connection
        conn.send(packets)
        self._metrics.sent_qos[0] += len(packets)  # deliver_now: QoS 0 only
        self._published(len(packets))

    def flush(self, packets: list[Packet]) -> None:
        """Write ``packets`` (one ``conn.send``) and count the PUBLISHes among them.

        A connection already closing (the client's DISCONNECT was read with
        the acks that freed the window) drops them: see :meth:`unwritten`.
        """
        conn = self._host.connection
        if conn is None or not packets:
            return
        conn.send(packets)
        sent = 0
        by_qos = self._metrics.sent_qos
        for packet in packets:
            if type(packet) is Publish:
                sent += 1
                by_qos[packet.qos] += 1
        if sent:
            if conn.closed:
                self.unwritten(packets)
            self._published(sent)

    def unwritten(self, packets: Iterable[Packet]) -> None:
        """``packets`` never reached the client: its connection had closed.

        The flows whose first PUBLISH is among them go out with DUP=0 when
        resent ([MQTT-3.3.1-1]: DUP=1 only if it may have been received);
        a durable session journals that (``OutboundUnsent``).
        """
        ids = [packet.packet_id for packet in packets
               if isinstance(packet, Publish) and packet.packet_id is not None and not packet.dup]
        if not ids:
            return
        marked = self._core.unsent(ids)
        if marked:
            self._journal.unsent(marked)

    def _published(self, count: int) -> None:
        """``count`` PUBLISHes were written: count them; arm the MQTT 3.x retransmission."""
        self._metrics.publish_sent += count
        retry = self._retransmission
        if retry is not None and not retry.armed and self._core.flying:
            self._retransmitter.sent()  # only flows in flight need the timer
