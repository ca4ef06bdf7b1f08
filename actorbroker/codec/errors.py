"""Codec layer: the errors a peer's bytes can cause. Imports the stdlib and reason_codes only.

Two kinds of failure, as in h11 and wsproto:

* the peer broke the protocol: a :class:`ProtocolError` (or a subclass) carrying
  the MQTT reason code to send back (v5) before closing the connection, and the
  spec's rule id in its message, e.g. ``[MQTT-3.3.1-4] PUBLISH has QoS 3``;
* we misused the API (encoding a packet that cannot exist, a bad argument):
  ``ValueError`` or ``TypeError``, which is a bug and crashes its actor.

Rule ids are those of MQTT 5.0; where MQTT 3.1.1 numbers the same rule
differently, the message gives both, e.g. ``[MQTT-1.5.4-2] (3.1.1: [MQTT-1.5.3-2])``.
"""

from __future__ import annotations

from typing import ClassVar

from .reason_codes import ReasonCode

__all__ = ["MalformedPacketError", "PacketTooLargeError", "ProtocolError"]


class ProtocolError(Exception):
    """The peer broke a rule of the protocol; the connection must be closed.

    ``reason_code`` is what an MQTT 5 receiver sends in its DISCONNECT (or
    CONNACK) before closing; 0x82 (Protocol Error) unless the rule names
    another one.
    """

    default_reason_code: ClassVar[ReasonCode] = ReasonCode.PROTOCOL_ERROR

    def __init__(self, message: str, reason_code: int | None = None) -> None:
        super().__init__(message)
        self.reason_code: ReasonCode = ReasonCode(
            self.default_reason_code if reason_code is None else reason_code
        )

    def __reduce__(self) -> tuple[type[ProtocolError], tuple[str, int]]:
        return (type(self), (str(self), int(self.reason_code)))


class MalformedPacketError(ProtocolError):
    """The bytes do not form a packet the spec allows (reason 0x81 by default)."""

    default_reason_code: ClassVar[ReasonCode] = ReasonCode.MALFORMED_PACKET


class PacketTooLargeError(MalformedPacketError):
    """The packet is larger than the receiver's maximum packet size (reason 0x95)."""

    default_reason_code: ClassVar[ReasonCode] = ReasonCode.PACKET_TOO_LARGE
