"""Session layer: MQTT 5 flow control arithmetic: packet sizes and the inbound quota. Stdlib and codec only.

* :func:`publish_size`: the exact size on the wire of a v5 PUBLISH, without
  encoding the payload, so that a message too large for a client's Maximum
  Packet Size is dropped for that client before it takes a packet
  identifier ([MQTT-3.1.2-24], [MQTT-3.1.2-25]).
* :class:`InboundQuota`: the client's side of the broker's Receive Maximum:
  QoS 1 and QoS 2 PUBLISHes it has sent and the broker has not finished
  acknowledging ([MQTT-3.3.4-7]); one more than the maximum is 0x93.

What counts as unacknowledged: a QoS 2 PUBLISH from its arrival until its
PUBREL is answered with PUBCOMP (the core's inbound QoS 2 table), and a QoS
1 PUBLISH within the read that brought it (its PUBACK goes out with the
read's answers). A PUBACK held back longer (by the storage's group commit)
is not counted, so the broker may tolerate more than the maximum there, but
never disconnects a client that keeps to it.
"""

from __future__ import annotations

from actorbroker.codec import ProtocolError, Properties, ReasonCode
from actorbroker.codec.property_codec import encode_properties

__all__ = ["InboundQuota", "publish_size"]

_PUBLISH = 3  # the property context of PUBLISH


def _varint_size(value: int) -> int:
    return 1 if value < 0x80 else 2 if value < 0x4000 else 3 if value < 0x200000 else 4


def publish_size(topic: str, payload_size: int, qos: int, properties: Properties) -> int:
    """Bytes of a v5 PUBLISH with these parts, fixed header included."""
    props = encode_properties(properties, _PUBLISH)
    remaining = 2 + len(topic.encode("utf-8", "surrogatepass")) + (2 if qos else 0)
    remaining += len(props) + payload_size
    return 1 + _varint_size(remaining) + remaining


class InboundQuota:
    """Counts a connection's unacknowledged QoS 1/2 PUBLISHes against the Receive Maximum."""

    __slots__ = ("maximum", "qos1_in_read")

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.qos1_in_read = 0

    def read_started(self) -> None:
        """A new read: the QoS 1 PUBLISHes of the last one were acknowledged with it."""
        self.qos1_in_read = 0

    def admit(self, qos: int, awaiting_pubrel: int) -> None:
        """A new QoS 1/2 PUBLISH arrived (not a QoS 2 retry): count it or raise 0x93."""
        if self.qos1_in_read + awaiting_pubrel >= self.maximum:
            raise ProtocolError(
                f"[MQTT-3.3.4-7] more than Receive Maximum {self.maximum} QoS 1/2"
                " PUBLISHes unacknowledged", ReasonCode.RECEIVE_MAXIMUM_EXCEEDED,
            )
        if qos == 1:
            self.qos1_in_read += 1

