"""Actors layer: a session's deliveries and writes, as a SessionActor mixin. Stdlib, pykka, codec, session.

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
them); without, neither call is made: the actor binds ``_deliver`` and
``_send_now`` once, to the ``_direct`` or ``_journaled`` variants below
(actors/session_durable.py, ``_journal_init``). Anything else
(QoS 1/2, a held or congested output, an expired message, MQTT 5 aliases
or size limits) goes through ``SessionCore.deliver`` and its effects; a
big batch goes out in chunks of :data:`CHUNK`, watching congestion.

A QoS 1/2 PUBLISH written to a connection that had closed already (it
drops it) is reported to the core as never sent (``SessionCore.unsent``),
so that its resend is a first send, DUP=0; so are those held for the
commit log when the connection ends (``LogJournal.held_for``).

Counting: every PUBLISH written counts in ``publish_sent``; the MQTT 3.x
retransmission timer is armed (:mod:`.session_retry`) when a PUBLISH goes
out while QoS 1/2 flows are in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Packet, Publish
from actorbroker.ports import ReadCredit
from actorbroker.session import Effect, Send, SessionCore

from .messages import Deliver
from .sessions.journal.interface import Journal
from .session_conn import CHUNK

__all__ = ["SessionOutput"]


class SessionOutput:
    """What SessionActor does with a ``Deliver`` and with packets to write (see the module doc)."""

    client_id: str
    _core: SessionCore
    _conn: Any
    _epoch: int
    _metrics: Any
    _journal: Journal
    _retransmission: Any
    _clock: Callable[[], float]  # the loop's time(), bound
    _run: Callable[[list[Effect]], None]
    _credit: ReadCredit | None
    _send_now: Callable[[list[Packet]], None]

    if TYPE_CHECKING:
        def _carry_out(self, effects: list[Effect]) -> None: ...

        def _retransmit_sent(self) -> None: ...

    def _deliver_journaled(self, message: Deliver) -> None:
        """A ``Deliver`` with storage on: what the journal lets go to the core now (the rest
        joins a resumed queue, or a hibernated session counts it), then as without."""
        if message.epoch == self._epoch:  # (stale ones are counted as without)
            messages = message.messages
            admitted = self._journal.deliverable(messages, message.qos)
            if admitted is not messages:
                if not admitted:
                    return
                message = Deliver(admitted, message.qos, message.epoch, message.credit)
        self._deliver_direct(message)

    def _deliver_direct(self, message: Deliver) -> None:
        if message.epoch != self._epoch:
            # For subscriptions of a session state that was discarded (their removal
            # is on its way): lost with that state, as the core counts its queue.
            self._metrics.drop("session_ended", len(message.messages), client_id=self.client_id,
                               topic=message.messages[0].topic)
            return
        core, qos, now = self._core, message.qos, self._clock()
        conn = self._conn
        if conn is not None and not core.output_held and conn.congested:
            core.hold_output()  # the socket is backed up: queue (within the limits) until Drained
        messages = message.messages
        if conn is not None and len(messages) <= CHUNK:
            packets = core.deliver_now(messages, qos, now)
            if packets is not None:
                self._send_now(packets)
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
        """``_send_now`` with storage on: through the journal, which may hold them."""
        send = Send(tuple(packets))
        effects = self._journal.intercept([send], self._conn, self._credit)
        if len(effects) != 1 or effects[0] is not send:
            self._carry_out(effects)  # held behind earlier output, or more came with it
            return
        self._write_now(packets)

    def _write_now(self, packets: list[Packet]) -> None:
        """Write the QoS 0 PUBLISHes of ``SessionCore.deliver_now`` (an attached connection):
        ``_send_now`` without storage."""
        self._conn.send(packets)
        self._metrics.sent_qos[0] += len(packets)  # deliver_now: QoS 0 only
        self._published(len(packets))

    def _flush(self, packets: list[Packet]) -> None:
        """Write ``packets`` (one ``conn.send``) and count the PUBLISHes among them.

        A connection already closing (the client's DISCONNECT was read with
        the acks that freed the window) drops them: see :meth:`_unwritten`.
        """
        conn = self._conn
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
                self._unwritten(packets)
            self._published(sent)

    def _unwritten(self, packets: Iterable[Packet]) -> None:
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
            self._retransmit_sent()  # only flows in flight need the timer
