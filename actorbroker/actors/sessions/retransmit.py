"""Actors layer: in-session retransmission to MQTT 3.x clients, a session actor's component. Stdlib, codec, session.

MQTT 3.1 and 3.1.1 allow a broker to send an unacknowledged QoS 1/2
PUBLISH again (with DUP=1), or its PUBREL, while the client stays
connected; many 3.x clients and brokers rely on it (Mosquitto 1.x's
retry_interval). MQTT 5 forbids it ([MQTT-4.4.0-1]: only on reconnect).
With ``[retry] mqtt3_in_session`` on, a 3.x session arms one timer when a
QoS 1/2 flow goes out; when it fires without progress (the oldest packet id
in flight is the same) every flow is sent again and the next wait grows
with exponential backoff and jitter (:class:`~actorbroker.session.backoff.Retransmission`).

A :class:`Retransmitter` holds its session's core and the actor as a
:class:`~.host.SessionHost`: it sends through ``run_effects`` and arms its
timer with ``call_later`` (a ``Retransmit`` told to the actor).
"""

from __future__ import annotations

from dataclasses import dataclass

from actorbroker.codec import Packet, PubRel
from actorbroker.session import OutboundState, Send, SessionCore
from actorbroker.session.backoff import BackoffPolicy, Retransmission

from .host import SessionHost

__all__ = ["Retransmit", "Retransmitter"]


@dataclass(frozen=True, slots=True)
class Retransmit:
    """The session's retransmission timer fired."""

    generation: int


class Retransmitter:
    """One session's MQTT 3.x retransmission (see the module doc); ``policy`` None: off."""

    __slots__ = ("_core", "_generation", "_host", "retransmission")

    def __init__(self, host: SessionHost, core: SessionCore, policy: BackoffPolicy | None) -> None:
        self._host = host
        self._core = core
        #: The timer's backoff state (None: retransmission off); the Output reads ``armed``.
        self.retransmission = None if policy is None else Retransmission(policy)
        self._generation = 0

    def close(self) -> None:
        """The actor stopped: let go of it (a reference cycle through the actor otherwise).
        Once more does nothing."""
        if hasattr(self, "_host"):
            del self._host

    def sent(self) -> None:
        """A QoS 1/2 PUBLISH went out: arm the timer if it is not (3.x connections only)."""
        retry = self.retransmission
        if retry is None or retry.armed or self._core.protocol_level == 5:
            return
        delay = retry.arm(next(iter(self._core.inflight), None))
        if delay is not None:
            self._later(delay)

    def fired(self, message: Retransmit) -> None:
        """The timer fired: resend every flow if none progressed, and re-arm."""
        retry = self.retransmission
        if retry is None or message.generation != self._generation:
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
            self._host.run_effects([Send(tuple(packets))])
        if delay is not None:
            self._later(delay)

    def reset(self) -> None:
        """A connection attached or ended: forget the timer."""
        if self.retransmission is not None:
            self.retransmission.reset()
            self._generation += 1

    def _later(self, delay: float) -> None:
        self._host.call_later(delay, Retransmit(self._generation))
