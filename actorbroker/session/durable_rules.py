"""Session layer: what the commit log asks of the session core, as a mixin of SessionCore. Stdlib and codec only.

The commit log keeps what MQTT calls the Session State beyond the
subscriptions (which :meth:`SessionCore.restore` takes back): the outbound
QoS 1/2 flows in flight, by packet identifier and stage, and the inbound
QoS 2 packet identifiers awaiting PUBREL. After a restart (of the broker or
of the session's actor) :meth:`DurableRules.restore_flows` puts them back,
so that the next CONNECT resends each PUBLISH with DUP=1 under its old
packet identifier (DUP=0 for one never written before the connection
ended), or its PUBREL when the client already sent PUBREC
([MQTT-4.4.0-1]), and a retried inbound QoS 2 PUBLISH is acknowledged
without being routed twice ([MQTT-4.3.3-9]).

A QoS 1/2 PUBLISH the core accepted but the log could not store (a full
disk, an I/O error) is refused by :meth:`DurableRules.refuse_unstored`, in
place of the acknowledgement the core had promised: MQTT 5 gets PUBACK/
PUBREC with the storage's reason code and a Reason String; MQTT 3 has no
refusing acknowledgement, so none is sent and the connection is closed
(the client sends the PUBLISH again after reconnecting, [MQTT-4.4.0-1]).
A refused QoS 2 packet identifier is free again: the client's retry is a
new message, not a duplicate.

It lives apart so that the core stays one readable module; only the
core's own parts are touched, through their methods.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from actorbroker.codec import PubAck, PubRec, ReasonCode

from .effects import Close, Effect, Send
from .inbound import Inbox
from .lifecycle import SessionState
from .link import Link
from .message import Delivery
from .outbox import Outbox

__all__ = ["DurableRules"]

#: The storage's codes a Close may carry as they are; any other closes as 0x80.
_CLOSE_CODES = frozenset({ReasonCode.QUOTA_EXCEEDED, ReasonCode.UNSPECIFIED_ERROR})


class DurableRules:
    """The commit log's half of :class:`~actorbroker.session.core.SessionCore` (see the module doc)."""

    # SessionCore's state, declared for the type checker (SessionCore sets it).
    protocol_level: int
    _state: SessionState
    _link: Link | None
    _outbox: Outbox
    _inbox: Inbox

    def restore_flows(self, flights: Iterable[tuple[int, Delivery, bool]],
                      inbound_qos2: Iterable[int], unsent: Collection[int] = ()) -> None:
        """Put back ``(packet id, delivery, released)`` flows in resend order and the inbound ids.

        ``released``: the client sent PUBREC (QoS 2): PUBREL is resent, never
        the PUBLISH. ``unsent``: packet ids of flows whose PUBLISH was never
        written (:meth:`~.outbound.OutboundRules.unsent`): sent with DUP=0.
        Only for a DISCONNECTED core (after ``restore``); ValueError
        otherwise, and for a QoS 0 flight or a packet id given twice.
        """
        state = self._state
        if state is not SessionState.DISCONNECTED:
            raise ValueError(f"flows are restored into a DISCONNECTED core, not {state.name}")
        inflight = self._outbox.inflight
        for packet_id, delivery, released in flights:
            inflight.restore(packet_id, delivery, released=released,
                             sent=released or packet_id not in unsent)
        qos2 = self._inbox.qos2
        for packet_id in inbound_qos2:
            qos2.publish(packet_id)

    def refuse_unstored(self, acks: Sequence[PubAck | PubRec], code: int,
                        reason: str) -> list[Effect]:
        """Refuse the PUBLISHes ``acks`` would have acknowledged: the log could not store them.

        Returns one ``Send`` per ack, in order, to carry out in its place
        (MQTT 5: the ack with ``code`` and "not stored: ``reason``" as its
        Reason String, within the client's Maximum Packet Size; MQTT 3: an
        empty one), then, at MQTT 3, the one ``Close`` (0x97 or 0x80 as
        ``code`` says, else 0x80). Nothing for no acks.
        """
        qos2 = self._inbox.qos2
        v5, link = self.protocol_level == 5, self._link
        text = f"not stored: {reason}"
        effects: list[Effect] = []
        for ack in acks:
            packet_id = ack.packet_id
            if type(ack) is PubRec and packet_id in qos2:
                qos2.release(packet_id)  # its retry is a new message
            if not v5:
                effects.append(Send(()))
            elif link is not None:
                effects.append(Send((link.refusal(type(ack), packet_id, code, text),)))
            else:  # the connection is gone (no Link): nothing says it wants a Reason String
                effects.append(Send((type(ack)(packet_id, code),)))
        if effects and not v5:
            effects.append(Close(
                ReasonCode(code) if code in _CLOSE_CODES else ReasonCode.UNSPECIFIED_ERROR,
                f"QoS 1/2 PUBLISH not stored ({reason}); closed without PUBACK so that the "
                "client sends it again after reconnecting [MQTT-4.4.0-1]"))
        return effects
