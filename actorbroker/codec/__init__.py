"""Codec layer: sans-IO MQTT 3.1, 3.1.1 and 5.0 codec. Imports the standard library only.

    from actorbroker.codec import Decoder, encode, MalformedPacketError

    decoder = Decoder()                  # server side: learns the level from CONNECT
    packets = decoder.feed(data)         # every complete packet; keeps the tail
    wire = encode(ConnAck(False, 0), decoder.protocol_level)

Everything ``feed`` raises is a :class:`ProtocolError` carrying the MQTT 5
reason code and the spec's rule id; nothing else escapes it. The connection
must then be closed.
"""

from .decoder import MAX_PACKET_SIZE, Decoder
from .encoder import encode
from .errors import MalformedPacketError, PacketTooLargeError, ProtocolError
from .packets import (
    PROTOCOL_LEVELS,
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    PacketType,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
    Will,
    protocol_name,
)
from .printable import SHOWN_LENGTH, shown
from .properties import NO_PROPERTIES, Properties, PropertyId
from .reason_codes import ConnectReturnCode, ReasonCode
from .topics import validate_topic_filter, validate_topic_name

__all__ = [
    "protocol_name",
    "MAX_PACKET_SIZE",
    "NO_PROPERTIES",
    "PROTOCOL_LEVELS",
    "SHOWN_LENGTH",
    "Auth",
    "ConnAck",
    "Connect",
    "ConnectReturnCode",
    "Decoder",
    "Disconnect",
    "MalformedPacketError",
    "Packet",
    "PacketTooLargeError",
    "PacketType",
    "PingReq",
    "PingResp",
    "Properties",
    "PropertyId",
    "ProtocolError",
    "PubAck",
    "PubComp",
    "PubRec",
    "PubRel",
    "Publish",
    "ReasonCode",
    "SubAck",
    "Subscribe",
    "Subscription",
    "UnsubAck",
    "Unsubscribe",
    "Will",
    "encode",
    "shown",
    "validate_topic_filter",
    "validate_topic_name",
]
