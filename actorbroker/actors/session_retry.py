"""Actors layer: in-session retransmission to MQTT 3.x clients, as a SessionActor mixin. Stdlib, supervisors, codec, session.

MQTT 3.1 and 3.1.1 allow a broker to send an unacknowledged QoS 1/2
PUBLISH again (with DUP=1), or its PUBREL, while the client stays
connected; many 3.x clients and brokers rely on it (Mosquitto 1.x's
retry_interval). MQTT 5 forbids it ([MQTT-4.4.0-1]: only on reconnect).
With ``[retry] mqtt3_in_session`` on, a 3.x session arms one timer when a
QoS 1/2 flow goes out; when it fires without progress (the oldest packet id
in flight is the same) every flow is sent again and the next wait grows
with exponential backoff and jitter (:class:`~actorbroker.session.backoff.Retransmission`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Packet, PubRel
from actorbroker.session import Effect, OutboundState, Send, SessionCore
from actorbroker.session.backoff import BackoffPolicy, Retransmission
from supervisors import send_after

__all__ = ["Retransmit", "Retransmitting"]


@dataclass(frozen=True, slots=True)
class Retransmit:
    """The session's retransmission timer fired."""

    generation: int


class Retransmitting:
    """What SessionActor does to retransmit to MQTT 3.x clients (see the module doc)."""

    _core: SessionCore
    _conn: Any
    _retransmission: Retransmission | None
    _retransmit_gen: int

    if TYPE_CHECKING:
        actor_ref: Any

        def _run(self, effects: list[Effect]) -> None: ...

    def _retransmit_init(self, policy: BackoffPolicy | None) -> None:
        self._retransmission = None if policy is None else Retransmission(policy)
        self._retransmit_gen = 0

    def _retransmit_sent(self) -> None:
        """A QoS 1/2 PUBLISH went out: arm the timer if it is not (3.x connections only)."""
        retry = self._retransmission
        if retry is None or retry.armed or self._core.protocol_level == 5:
            return
        delay = retry.arm(next(iter(self._core.inflight), None))
        if delay is not None:
            self._retransmit_later(delay)

    def _retransmit_fired(self, message: Retransmit) -> None:
        retry = self._retransmission
        if retry is None or message.generation != self._retransmit_gen:
            return  # stale: the connection changed since
        core = self._core
        flights = core.inflight
        resend, delay = retry.due(next(iter(flights), None) if core.attached else None)
        if resend:
            packets: list[Packet] = []
            for packet_id, (delivery, state) in flights.items():
                if state is OutboundState.AWAIT_PUBCOMP:
                    packets.append(PubRel(packet_id))
                else:
                    packets.append(delivery.to_publish(packet_id, dup=True))
            self._run([Send(tuple(packets))])
        if delay is not None:
            self._retransmit_later(delay)

    def _retransmit_reset(self) -> None:
        """A connection attached or ended: forget the timer."""
        if self._retransmission is not None:
            self._retransmission.reset()
            self._retransmit_gen += 1

    def _retransmit_later(self, delay: float) -> None:
        loop: Any = getattr(self, "actor_loop")  # noqa: B009 (LoopActor's)
        send_after(loop, self.actor_ref, delay, Retransmit(self._retransmit_gen))

