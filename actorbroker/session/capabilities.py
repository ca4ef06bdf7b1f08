"""Session layer: what the broker offers and enforces for MQTT 5 clients. Stdlib only.

One :class:`Mqtt5Policy` (part of :class:`~actorbroker.session.config.SessionConfig`)
is shared by every session core. It holds the server side of the MQTT 5
negotiation: the limits the broker holds clients to (Receive Maximum, Topic
Alias Maximum, the longest Session Expiry Interval it keeps) and what the
CONNACK tells them is (not) available. Maximum QoS and Retain Available
stay in :class:`~actorbroker.session.config.SessionConfig`, where MQTT 3
sessions read them too.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEVER_EXPIRES", "Mqtt5Policy"]

#: Session Expiry Interval meaning "the session does not expire" (section 3.1.2.11.2).
NEVER_EXPIRES = 0xFFFFFFFF
_MAX_PACKET = 268_435_455  # the largest Remaining Length: "no limit" for the configuration


@dataclass(frozen=True, slots=True)
class Mqtt5Policy:
    """The server side of the MQTT 5 negotiation (see the module doc).

    * ``max_session_expiry``: the longest Session Expiry Interval kept, in
      seconds; a client asking for more is told this one in CONNACK. None
      keeps what the client asks for, 0xFFFFFFFF (never) included.
    * ``receive_maximum``: QoS 1/2 PUBLISHes a client may have unacknowledged
      towards the broker ([MQTT-3.3.4-7]); told in CONNACK, 0x93 beyond it.
    * ``topic_alias_maximum``: the highest inbound Topic Alias accepted (0: none).
    * ``outbound_topic_aliases``: the most Topic Aliases the broker assigns on
      one connection (never more than the client's Topic Alias Maximum).
    * ``max_packet_size``: the largest packet accepted from a client, told in
      CONNACK when below what MQTT can encode (the transport enforces it).
    * ``max_keepalive``: a client asking for a longer Keep Alive, or for none,
      is given this one as Server Keep Alive.
    * ``*_available``: features a client is told are missing in CONNACK and
      refused in SUBACK (0xA2, 0xA1, 0x9E) when off.
    * ``response_information_prefix``: when not empty, a client that sets
      Request Response Information gets ``prefix + client id`` as Response
      Information in CONNACK.
    """

    max_session_expiry: int | None = None
    receive_maximum: int = 20
    topic_alias_maximum: int = 10
    outbound_topic_aliases: int = 10
    max_packet_size: int = _MAX_PACKET
    max_keepalive: int = 65535
    wildcard_available: bool = True
    subscription_ids_available: bool = True
    shared_available: bool = True
    response_information_prefix: str = ""

    def __post_init__(self) -> None:
        if self.max_session_expiry is not None and not 0 <= self.max_session_expiry <= NEVER_EXPIRES:
            raise ValueError("max_session_expiry must be None or 0..0xFFFFFFFF")
        if not 1 <= self.receive_maximum <= 65535:
            raise ValueError(f"receive_maximum must be in 1..65535, not {self.receive_maximum}")
        for name in ("topic_alias_maximum", "outbound_topic_aliases"):
            if not 0 <= getattr(self, name) <= 65535:
                raise ValueError(f"{name} must be in 0..65535")
        if not 0 <= self.max_keepalive <= 65535:
            raise ValueError("max_keepalive must be in 0..65535")

    @property
    def max_packet_size_told(self) -> int | None:
        """The Maximum Packet Size to put in CONNACK (None: no limit beyond the protocol's)."""
        return self.max_packet_size if self.max_packet_size < _MAX_PACKET else None
