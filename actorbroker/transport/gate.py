"""Transport layer: which packets of a read go to the session, when. Stdlib and codec only (pure).

:class:`InboundGate` applies the connection-state table of
:mod:`actorbroker.codec.states` to the packets of each read, server side:

* nothing but CONNECT first, no second CONNECT, nothing after DISCONNECT,
  no server-only packets (the table raises; the decoder already catches the
  first two);
* packets a client pipelines after its CONNECT are *held* until the server
  has sent a successful CONNACK, then released in order; a refusing
  CONNACK discards them ([MQTT-3.1.4-5]). AUTH and DISCONNECT pass at once
  while nothing is held. A v5 client that named an Authentication Method
  may send nothing else before CONNACK ([MQTT-3.1.2-30]).

No I/O and no clocks: the connection calls :meth:`route` per read,
:meth:`connack` when the session's CONNACK goes out and :meth:`release`
to get the held packets back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from actorbroker.codec import (
    NO_PROPERTIES,
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    Properties,
    ProtocolError,
    ReasonCode,
)
from actorbroker.codec.reason_codes import CONNACK_CODES, DISCONNECT_CODES
from actorbroker.codec.states import (CONNACK_SENT, INITIAL, STAY_CONNECTED, ConnectionState,
                                      next_state)

__all__ = ["InboundGate", "ReadPlan", "sniff_level"]

_S = ConnectionState
#: Packet classes a connected client may send without changing state (by class: a
#: read's packets are checked by ``type`` alone on the per-read fast path).
_CONNECTED_OK = frozenset(cls for cls in get_args(Packet) if cls.packet_type in STAY_CONNECTED)


@dataclass(slots=True)
class ReadPlan:
    """What to do with one read, in this order.

    1. ``connect``: hand this CONNECT to the gateway (at most one per read);
    2. ``deliver``: tell these packets to the session as one Inbound;
    3. ``error``: then close for this violation (the packets before it were legal);
    4. ``disconnected``: or close gracefully, the client said DISCONNECT.
    """

    deliver: list[Packet] = field(default_factory=list)
    connect: Connect | None = None
    error: ProtocolError | None = None
    disconnected: bool = False


class InboundGate:
    """Connection state, held packets and CONNACK bookkeeping of one connection."""

    __slots__ = ("state", "held", "auth_method", "connack_sent", "connack_ok")

    def __init__(self) -> None:
        self.state: ConnectionState = INITIAL
        #: Packets received after CONNECT, waiting for a successful CONNACK.
        self.held: list[Packet] = []
        #: The CONNECT named an Authentication Method (v5): only AUTH until CONNACK.
        self.auth_method = False
        #: Some CONNACK (accepting or refusing) has gone out.
        self.connack_sent = False
        #: A successful CONNACK has gone out: the connection is CONNECTED.
        self.connack_ok = False

    def route(self, packets: list[Packet]) -> ReadPlan:
        """Sort one read's packets; never raises for the peer's mistakes."""
        if self.state is _S.CONNECTED:
            ok = _CONNECTED_OK
            for packet in packets:
                if type(packet) not in ok:
                    break
            else:
                return ReadPlan(packets)
        plan = ReadPlan()
        deliver = plan.deliver
        try:
            for packet in packets:
                state = self.state
                if state is _S.AWAIT_CONNECT:
                    self.state = next_state(state, packet.packet_type)
                    assert isinstance(packet, Connect)  # the table admits nothing else
                    plan.connect = packet
                    self.auth_method = (packet.protocol_level == 5
                                        and packet.properties.authentication_method is not None)
                elif state is _S.AUTHENTICATING and (self.held or (
                        type(packet) not in (Auth, Disconnect) and not self.auth_method)):
                    self.held.append(packet)
                else:
                    self.state = next_state(state, packet.packet_type)
                    deliver.append(packet)
                    if self.state is _S.CLOSED:
                        plan.disconnected = True
                        break  # anything after DISCONNECT is ignored
        except ProtocolError as exc:
            plan.error = exc
        return plan

    def connack(self, reason_code: int) -> None:
        """A CONNACK went out: accepting moves to CONNECTED, refusing drops the held packets."""
        self.connack_sent = True
        if reason_code != 0 or self.state is not _S.AUTHENTICATING:
            self.held.clear()  # [MQTT-3.1.4-5]: never processed
            return
        self.connack_ok = True
        self.state = next_state(self.state, CONNACK_SENT)

    def farewell(self, reason_code: int, properties: Properties = NO_PROPERTIES
                 ) -> Disconnect | ConnAck | None:
        """The v5 packet telling the client why it is being closed, if one fits.

        DISCONNECT once connected; before any CONNACK, a CONNACK with the
        (error) code, counted as sent; nothing after a refusing CONNACK or
        the client's own DISCONNECT. Codes a packet cannot carry become 0x80.
        ``properties`` (a Reason String, a Server Reference) go with it.
        """
        if self.connack_ok:
            if self.state is not _S.CONNECTED:
                return None
            return Disconnect(reason_code if reason_code in DISCONNECT_CODES
                              else ReasonCode.UNSPECIFIED_ERROR, properties)
        if self.connack_sent or reason_code < 0x80:
            return None
        self.connack_sent = True
        return ConnAck(False, reason_code if reason_code in CONNACK_CODES
                       else ReasonCode.UNSPECIFIED_ERROR, properties)

    def release(self) -> list[Packet]:
        """The held packets, once a CONNACK has accepted the connection (else none)."""
        if not self.connack_ok:
            return []
        held, self.held = self.held, []
        return held


def sniff_level(head: bytes) -> int | None:
    """The protocol level byte of the CONNECT that ``head`` begins, if visible.

    Lets the server answer a v5 client whose CONNECT is malformed with a v5
    CONNACK although the decoder could not parse it.
    """
    if len(head) < 2 or head[0] != 0x10:
        return None
    i = 1
    while i < len(head) and i < 4 and head[i] & 0x80:
        i += 1
    i += 1
    for name in (b"\x00\x04MQTT", b"\x00\x06MQIsdp"):
        end = i + len(name)
        if head[i:end] == name and len(head) > end:
            return head[end]
    return None
