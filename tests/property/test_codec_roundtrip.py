"""Hypothesis round trips: arbitrary valid packets of each protocol level.

encode -> decode gives the packet back; decode -> encode gives the bytes
back; any split of a stream of packets decodes to the same packets.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from actorbroker.codec import (
    NO_PROPERTIES,
    Auth,
    ConnAck,
    Connect,
    Decoder,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    Properties,
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
    encode,
)
from actorbroker.codec.properties import SPECS, WILL_PROPERTIES, PropertyType
from actorbroker.codec.reason_codes import (
    AUTH_CODES,
    CONNACK_CODES,
    DISCONNECT_CODES,
    PUBACK_CODES,
    PUBREL_CODES,
    SUBACK_CODES,
    UNSUBACK_CODES,
)

# --- strings and topics ---------------------------------------------------------
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
text = st.text(CHARS, max_size=12)
plain_level = st.text(st.characters(blacklist_categories=("Cs",),
                                    blacklist_characters="\x00/+#"), max_size=6)
topic_names = st.lists(plain_level, min_size=1, max_size=4).map("/".join).filter(bool)
binary = st.binary(max_size=24)
packet_ids = st.integers(1, 0xFFFF)
qos = st.integers(0, 2)


@st.composite
def topic_filters(draw: Any, shared: bool = False) -> str:
    levels = draw(st.lists(st.one_of(plain_level, st.just("+")), min_size=1, max_size=4))
    if draw(st.booleans()):
        levels.append("#")
    result = "/".join(levels)
    if not result or (not shared and result.startswith("$share/")):
        result = "+"  # keep 3.x filters clear of the v5 shared-subscription syntax
    if shared and draw(st.booleans()):
        name = draw(st.text(st.characters(blacklist_categories=("Cs",),
                                          blacklist_characters="\x00/+#"), min_size=1, max_size=5))
        result = f"$share/{name}/{result}"
    return result


# --- properties --------------------------------------------------------------------
_VALUES: dict[PropertyType, st.SearchStrategy[Any]] = {
    PropertyType.BYTE: st.integers(0, 1),
    PropertyType.TWO_BYTE_INTEGER: st.integers(1, 0xFFFF),
    PropertyType.FOUR_BYTE_INTEGER: st.integers(1, 0xFFFFFFFF),
    PropertyType.VARIABLE_BYTE_INTEGER: st.integers(1, 268_435_455),
    PropertyType.UTF8_STRING: text,
    PropertyType.BINARY_DATA: binary,
    PropertyType.UTF8_STRING_PAIR: st.tuples(text, text),
}


@st.composite
def properties(draw: Any, context: int) -> Properties:
    values: dict[str, Any] = {}
    for spec in SPECS:
        if context not in spec.contexts or not draw(st.booleans()):
            continue
        value = _VALUES[spec.type]
        if spec.name in ("session_expiry_interval", "message_expiry_interval",
                         "will_delay_interval"):
            value = st.integers(0, 0xFFFFFFFF)
        if spec.name == "response_topic":
            value = topic_names
        if spec.name == "user_property":
            value = st.lists(value, min_size=1, max_size=3).map(tuple)
        elif spec.name == "subscription_identifier":
            value = st.lists(value, min_size=1, max_size=3 if context == 3 else 1).map(tuple)
        values[spec.name] = draw(value)
    if context == 1 and "authentication_method" not in values:
        values.pop("authentication_data", None)
    return Properties(**values) if values else NO_PROPERTIES


def props(level: int, context: int) -> st.SearchStrategy[Properties]:
    return properties(context) if level == 5 else st.just(NO_PROPERTIES)


def codes(level: int, allowed: frozenset[int]) -> st.SearchStrategy[int]:
    return st.sampled_from(sorted(allowed)) if level == 5 else st.just(0)


# --- packets ----------------------------------------------------------------------------
@st.composite
def connects(draw: Any, level: int) -> Connect:
    will = None
    if draw(st.booleans()):
        will = Will(draw(topic_names), draw(binary), draw(qos), draw(st.booleans()),
                    draw(props(level, WILL_PROPERTIES)))
    username = draw(st.none() | text)
    password = draw(st.none() | binary)
    if level < 5 and username is None:
        password = None
    return Connect("MQIsdp" if level == 3 else "MQTT", level, draw(text), draw(st.booleans()),
                   draw(st.integers(0, 0xFFFF)), username, password, will,
                   draw(props(level, 1)))


@st.composite
def connacks(draw: Any, level: int) -> ConnAck:
    code = draw(st.sampled_from(sorted(CONNACK_CODES)) if level == 5 else st.integers(0, 5))
    return ConnAck(draw(st.booleans()) and code == 0, code, draw(props(level, 2)))


@st.composite
def publishes(draw: Any, level: int) -> Publish:
    q = draw(qos)
    properties = draw(props(level, 3))
    topic = draw(topic_names)
    if properties.topic_alias is not None and draw(st.booleans()):
        topic = ""
    return Publish(topic, draw(st.binary(max_size=300)), q, draw(st.booleans()),
                   q > 0 and draw(st.booleans()), draw(packet_ids) if q else None, properties)


def acks(cls: Any, level: int, allowed: frozenset[int], context: int) -> st.SearchStrategy[Any]:
    return st.builds(cls, packet_ids, codes(level, allowed), props(level, context))


@st.composite
def subscribes(draw: Any, level: int) -> Subscribe:
    subs = []
    for _ in range(draw(st.integers(1, 3))):
        topic_filter = draw(topic_filters(shared=level == 5))
        if level < 5:
            subs.append(Subscription(topic_filter, draw(qos)))
            continue
        no_local = draw(st.booleans()) and not topic_filter.startswith("$share/")
        subs.append(Subscription(topic_filter, draw(qos), no_local, draw(st.booleans()),
                                 draw(st.integers(0, 2))))
    return Subscribe(draw(packet_ids), tuple(subs), draw(props(level, 8)))


def subacks(level: int) -> st.SearchStrategy[SubAck]:
    allowed = sorted(SUBACK_CODES) if level == 5 else [0, 1, 2, 0x80]
    return st.builds(SubAck, packet_ids, st.lists(st.sampled_from(allowed), min_size=1,
                                                  max_size=4).map(tuple), props(level, 9))


def unsubscribes(level: int) -> st.SearchStrategy[Unsubscribe]:
    return st.builds(Unsubscribe, packet_ids,
                     st.lists(topic_filters(shared=level == 5), min_size=1, max_size=3).map(tuple),
                     props(level, 10))


def unsubacks(level: int) -> st.SearchStrategy[UnsubAck]:
    if level < 5:
        return st.builds(UnsubAck, packet_ids)
    return st.builds(UnsubAck, packet_ids, st.lists(st.sampled_from(sorted(UNSUBACK_CODES)),
                                                    min_size=1, max_size=4).map(tuple),
                     props(level, 11))


def packets(level: int) -> st.SearchStrategy[Packet]:
    """Any packet except CONNECT at ``level``."""
    options: list[st.SearchStrategy[Any]] = [
        connacks(level), publishes(level),
        acks(PubAck, level, PUBACK_CODES, 4), acks(PubRec, level, PUBACK_CODES, 5),
        acks(PubRel, level, PUBREL_CODES, 6), acks(PubComp, level, PUBREL_CODES, 7),
        subscribes(level), subacks(level), unsubscribes(level), unsubacks(level),
        st.just(PingReq()), st.just(PingResp()),
        st.builds(Disconnect, codes(level, DISCONNECT_CODES), props(level, 14)),
    ]
    if level == 5:
        options.append(st.builds(Auth, codes(level, AUTH_CODES), props(level, 15)))
    return st.one_of(*options)


levels = st.sampled_from([3, 4, 5])


@st.composite
def level_and_packet(draw: Any) -> tuple[int, Packet]:
    level = draw(levels)
    return level, draw(st.one_of(connects(level), packets(level)))


@st.composite
def server_streams(draw: Any) -> tuple[int, list[Packet]]:
    """What a client sends: a CONNECT, then packets at its level."""
    level = draw(levels)
    return level, [draw(connects(level))] + draw(st.lists(packets(level), max_size=8))


# --- properties tested ----------------------------------------------------------------
@settings(max_examples=600)
@given(level_and_packet())
def test_encode_then_decode_gives_the_packet(case: tuple[int, Packet]) -> None:
    level, packet = case
    assert Decoder(level).feed(encode(packet, level)) == [packet]


@settings(max_examples=300)
@given(level_and_packet())
def test_decode_then_encode_gives_the_bytes(case: tuple[int, Packet]) -> None:
    level, packet = case
    wire = encode(packet, level)
    (decoded,) = Decoder(level).feed(wire)
    assert encode(decoded, level) == wire


@settings(max_examples=300)
@given(server_streams(), st.data())
def test_any_split_of_a_stream_gives_the_same_packets(case: tuple[int, list[Packet]],
                                                      data: st.DataObject) -> None:
    level, stream = case
    wire = b"".join(encode(p, level) for p in stream)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=10)))
    decoder = Decoder()  # server side: learns the level from the CONNECT
    got: list[Packet] = []
    for start, stop in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        got += decoder.feed(wire[start:stop])
    assert got == stream
    assert decoder.protocol_level == level
    assert decoder.buffered == 0
