"""Every validation rule of the decoder: exception type, reason code and the spec's rule id.

Vectors are hand-written bytes breaking exactly one rule each.
"""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Decoder,
    MalformedPacketError,
    PacketTooLargeError,
    ProtocolError,
    ReasonCode,
)

from .test_codec_vectors import h

M, P = MalformedPacketError, ProtocolError
R = ReasonCode

# (id, protocol level, bytes, exception type, reason code, text the message must contain)
CASES = [
    # Fixed-header flags per packet type (section 2.1.3).
    ("puback-flags", 4, "41 02 00 01", M, R.MALFORMED_PACKET, "[MQTT-2.2.2-2]"),
    ("puback-flags-v5", 5, "48 02 00 01", M, R.MALFORMED_PACKET, "[MQTT-2.1.3-1]"),
    ("connect-flags", 4, "11 0c 00 04 'MQTT' 04 02 00 3c 00 00", M, R.MALFORMED_PACKET, "[MQTT-2.1.3-1]"),
    ("pubrel-flags", 4, "60 02 00 01", M, R.MALFORMED_PACKET, "[MQTT-3.6.1-1]"),
    ("subscribe-flags", 5, "80 07 00 01 00 00 01 'a' 00", M, R.MALFORMED_PACKET, "[MQTT-3.8.1-1]"),
    ("unsubscribe-flags", 4, "a0 05 00 01 00 01 'a'", M, R.MALFORMED_PACKET, "[MQTT-3.10.1-1]"),
    ("pingreq-flags", 4, "c1 00", M, R.MALFORMED_PACKET, "[MQTT-2.1.3-1]"),
    ("disconnect-flags", 4, "e2 00", M, R.MALFORMED_PACKET, "[MQTT-3.14.1-1]"),
    ("pubrel-dup-only-in-3.1", 4, "6a 02 00 01", M, R.MALFORMED_PACKET, "[MQTT-3.6.1-1]"),
    ("reserved-type-0", 4, "00 00", M, R.MALFORMED_PACKET, "reserved"),
    ("auth-below-v5", 4, "f0 00", M, R.MALFORMED_PACKET, "AUTH exists in MQTT 5 only"),
    # PUBLISH flags.
    ("publish-qos3", 4, "36 05 00 01 'a' 00 01", M, R.MALFORMED_PACKET, "[MQTT-3.3.1-4]"),
    ("publish-dup-qos0", 4, "38 04 00 01 'ax'", M, R.MALFORMED_PACKET, "[MQTT-3.3.1-2]"),
    # Variable byte integers.
    ("varint-five-bytes", 4, "30 ff ff ff ff 01", M, R.MALFORMED_PACKET, "longer than four bytes"),
    ("varint-not-minimal", 4, "c0 80 00", M, R.MALFORMED_PACKET, "[MQTT-1.5.5-1]"),
    ("property-varint-not-minimal", 5, "30 08 00 01 't' 03 0b 81 00 'x'", M, R.MALFORMED_PACKET, "[MQTT-1.5.5-1]"),
    ("property-length-five-bytes", 5, "30 08 00 01 't' ff ff ff ff 01", M, R.MALFORMED_PACKET, "longer than four bytes"),
    # UTF-8 strings (section 1.5.4; 3.1.1 section 1.5.3).
    ("utf8-invalid-byte", 4, "30 04 00 01 ff 'x'", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-1]"),
    ("utf8-surrogate", 4, "30 06 00 03 ed a0 80 'x'", M, R.MALFORMED_PACKET, "[MQTT-1.5.3-1]"),
    ("utf8-overlong", 4, "30 05 00 02 c0 af 'x'", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-1]"),
    ("utf8-truncated-sequence", 4, "30 04 00 02 e2 82", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-1]"),
    ("utf8-null-topic", 4, "30 04 00 01 00 'x'", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-2]"),
    ("utf8-null-client-id", 4, "10 0d 00 04 'MQTT' 04 02 00 3c 00 01 00", M, R.MALFORMED_PACKET, "[MQTT-1.5.3-2]"),
    ("utf8-null-user-property", 5, "30 0b 00 01 't' 07 26 00 01 00 00 01 'v'", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-2]"),
    ("utf8-surrogate-filter", 4, "82 08 00 01 00 03 ed b0 80 00", M, R.MALFORMED_PACKET, "[MQTT-1.5.4-1]"),
    # Topic names (section 4.7).
    ("topic-name-plus", 4, "30 05 00 03 'a/+'", P, R.TOPIC_NAME_INVALID, "[MQTT-3.3.2-2]"),
    ("topic-name-hash", 5, "30 06 00 03 'a/#' 00", P, R.TOPIC_NAME_INVALID, "[MQTT-4.7.0-1]"),
    ("topic-name-empty-v3", 4, "30 02 00 00", P, R.TOPIC_NAME_INVALID, "[MQTT-4.7.3-1]"),
    ("topic-name-empty-no-alias-v5", 5, "30 03 00 00 00", P, R.TOPIC_NAME_INVALID, "[MQTT-4.7.3-1]"),
    ("will-topic-wildcard", 4, "10 11 00 04 'MQTT' 04 06 00 00 00 00 00 01 '#' 00 00", P, R.TOPIC_NAME_INVALID, "[MQTT-3.3.2-2]"),
    ("response-topic-wildcard", 5, "30 08 00 01 't' 04 08 00 01 '+'", P, R.PROTOCOL_ERROR, "Response Topic"),
    # Topic filters.
    ("filter-hash-not-last", 4, "82 0a 00 01 00 05 'a/#/b' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.1-2]"),
    ("filter-hash-in-level", 5, "82 08 00 01 00 00 02 'a#' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.1-1]"),
    ("filter-plus-in-level", 4, "82 09 00 01 00 04 'a/b+' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.1-3]"),
    ("filter-plus-v5", 5, "82 08 00 01 00 00 02 '+a' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.1-2]"),
    ("filter-empty", 4, "82 05 00 01 00 00 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.3-1]"),
    ("unsubscribe-filter-invalid", 4, "a2 06 00 01 00 02 '#a'", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.7.1-2]"),
    ("shared-empty-share-name", 5, "82 0f 00 01 00 00 09 '$share//a' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.8.2-1]"),
    ("shared-no-filter", 5, "82 0f 00 01 00 00 09 '$share/g/' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.8.2-1]"),
    ("shared-name-wildcard", 5, "82 11 00 01 00 00 0b '$share/g+/a' 00", P, R.TOPIC_FILTER_INVALID, "[MQTT-4.8.2-2]"),
    ("shared-no-local", 5, "82 10 00 01 00 00 0a '$share/g/a' 04", P, R.PROTOCOL_ERROR, "[MQTT-3.8.3-4]"),
    # Packet identifiers (section 2.2.1; 3.1.1 section 2.3.1).
    ("publish-qos1-packet-id-0", 4, "32 05 00 01 'a' 00 00", M, R.MALFORMED_PACKET, "[MQTT-2.3.1-1]"),
    ("puback-packet-id-0", 5, "40 02 00 00", M, R.MALFORMED_PACKET, "[MQTT-2.2.1-3]"),
    ("subscribe-packet-id-0", 4, "82 06 00 00 00 01 'a' 00", M, R.MALFORMED_PACKET, "[MQTT-2.2.1-3]"),
    ("unsubscribe-packet-id-0", 4, "a2 05 00 00 00 01 'a'", M, R.MALFORMED_PACKET, "[MQTT-2.2.1-3]"),
    ("suback-packet-id-0", 4, "90 03 00 00 00", M, R.MALFORMED_PACKET, "[MQTT-2.2.1-3]"),
    # CONNECT flags (section 3.1.2.3).
    ("connect-reserved-flag", 4, "10 0c 00 04 'MQTT' 04 03 00 3c 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-3]"),
    ("will-qos-without-will-v311", 4, "10 0c 00 04 'MQTT' 04 0a 00 3c 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-13]"),
    ("will-qos-without-will-v5", 5, "10 0d 00 04 'MQTT' 05 12 00 3c 00 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-11]"),
    ("will-retain-without-will-v311", 4, "10 0c 00 04 'MQTT' 04 22 00 3c 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-15]"),
    ("will-retain-without-will-v5", 5, "10 0d 00 04 'MQTT' 05 20 00 3c 00 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-13]"),
    ("will-qos3-v311", 3, "10 13 00 06 'MQIsdp' 03 1e 00 3c 00 00 00 01 'w' 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-14]"),
    ("will-qos3-v5", 5, "10 0d 00 04 'MQTT' 05 1e 00 3c 00 00 00", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-12]"),
    ("password-without-username-v311", 4, "10 10 00 04 'MQTT' 04 42 00 3c 00 00 00 02 'pw'", M, R.MALFORMED_PACKET, "[MQTT-3.1.2-22]"),
    ("protocol-name", 4, "10 0c 00 04 'MQTX' 04 02 00 3c 00 00", P, R.UNSUPPORTED_PROTOCOL_VERSION, "[MQTT-3.1.2-1]"),
    ("protocol-level-6", 5, "10 0c 00 04 'MQTT' 06 02 00 3c 00 00", P, R.UNSUPPORTED_PROTOCOL_VERSION, "[MQTT-3.1.2-2]"),
    ("protocol-mqisdp-level-4", 4, "10 0e 00 06 'MQIsdp' 04 02 00 3c 00 00", P, R.UNSUPPORTED_PROTOCOL_VERSION, "[MQTT-3.1.2-2]"),
    ("auth-data-without-method", 5, "10 12 00 04 'MQTT' 05 02 00 00 05 16 00 02 01 02 00 00", P, R.PROTOCOL_ERROR, "Authentication Data"),
    # CONNACK.
    ("connack-reserved-bits", 4, "20 02 02 00", M, R.MALFORMED_PACKET, "[MQTT-3.2.2-1]"),
    ("connack-session-present-with-error-v311", 4, "20 02 01 05", P, R.PROTOCOL_ERROR, "[MQTT-3.2.2-4]"),
    ("connack-session-present-with-error-v5", 5, "20 03 01 87 00", P, R.PROTOCOL_ERROR, "[MQTT-3.2.2-6]"),
    ("connack-reserved-return-code", 4, "20 02 00 06", M, R.MALFORMED_PACKET, "reserved"),
    ("connack-bad-reason-v5", 5, "20 03 00 01 00", P, R.PROTOCOL_ERROR, "[MQTT-3.2.2-8]"),
    # Reason codes per packet (v5).
    ("puback-bad-reason", 5, "40 03 00 01 05", P, R.PROTOCOL_ERROR, "[MQTT-3.4.2-1]"),
    ("pubrec-bad-reason", 5, "50 03 00 01 92", P, R.PROTOCOL_ERROR, "[MQTT-3.5.2-1]"),
    ("pubrel-bad-reason", 5, "62 03 00 01 10", P, R.PROTOCOL_ERROR, "[MQTT-3.6.2-1]"),
    ("pubcomp-bad-reason", 5, "70 03 00 01 80", P, R.PROTOCOL_ERROR, "[MQTT-3.7.2-1]"),
    ("suback-bad-reason", 5, "90 04 00 01 00 03", P, R.PROTOCOL_ERROR, "[MQTT-3.9.3-2]"),
    ("suback-bad-return-code-v311", 4, "90 03 00 01 03", M, R.MALFORMED_PACKET, "[MQTT-3.9.3-2]"),
    ("unsuback-bad-reason", 5, "b0 04 00 01 00 01", P, R.PROTOCOL_ERROR, "[MQTT-3.11.3-2]"),
    ("disconnect-bad-reason", 5, "e0 01 01", P, R.PROTOCOL_ERROR, "[MQTT-3.14.2-1]"),
    ("auth-bad-reason", 5, "f0 01 80", P, R.PROTOCOL_ERROR, "[MQTT-3.15.2-1]"),
    # SUBSCRIBE / UNSUBSCRIBE payloads.
    ("subscribe-reserved-bits-v311", 4, "82 06 00 01 00 01 'a' 04", M, R.MALFORMED_PACKET, "[MQTT-3.8.3-4]"),
    ("subscribe-qos3-v311", 4, "82 06 00 01 00 01 'a' 03", M, R.MALFORMED_PACKET, "[MQTT-3.8.3-4]"),
    ("subscribe-reserved-bits-v5", 5, "82 07 00 01 00 00 01 'a' 40", M, R.MALFORMED_PACKET, "[MQTT-3.8.3-5]"),
    ("subscribe-qos3-v5", 5, "82 07 00 01 00 00 01 'a' 03", P, R.PROTOCOL_ERROR, "Maximum QoS is 3"),
    ("subscribe-retain-handling-3", 5, "82 07 00 01 00 00 01 'a' 30", P, R.PROTOCOL_ERROR, "Retain Handling is 3"),
    ("subscribe-empty-v311", 4, "82 02 00 01", P, R.PROTOCOL_ERROR, "[MQTT-3.8.3-3]"),
    ("subscribe-empty-v5", 5, "82 03 00 01 00", P, R.PROTOCOL_ERROR, "[MQTT-3.8.3-2]"),
    ("unsubscribe-empty", 4, "a2 02 00 01", P, R.PROTOCOL_ERROR, "[MQTT-3.10.3-2]"),
    ("suback-empty", 4, "90 02 00 01", P, R.PROTOCOL_ERROR, "SUBACK has no reason code"),
    ("unsuback-empty-v5", 5, "b0 03 00 01 00", P, R.PROTOCOL_ERROR, "UNSUBACK has no reason code"),
    # Properties (section 2.2.2).
    ("property-duplicate", 5, "30 0e 00 01 't' 0a 02 00 00 00 01 02 00 00 00 02",
     P, R.PROTOCOL_ERROR, "more than once"),
    ("subscription-identifier-twice-in-subscribe", 5, "82 0b 00 01 04 0b 01 0b 02 00 01 'a' 00",
     P, R.PROTOCOL_ERROR, "more than once"),
    ("property-not-allowed-in-packet", 5, "30 09 00 01 't' 05 11 00 00 00 01",
     P, R.PROTOCOL_ERROR, "not allowed in PUBLISH"),
    ("will-delay-outside-will", 5, "10 12 00 04 'MQTT' 05 02 00 00 05 18 00 00 00 01 00 00",
     P, R.PROTOCOL_ERROR, "not allowed in CONNECT"),
    ("unknown-property", 5, "30 06 00 01 't' 02 04 00", M, R.MALFORMED_PACKET, "unknown property identifier 0x04"),
    ("payload-format-indicator-2", 5, "30 06 00 01 't' 02 01 02", P, R.PROTOCOL_ERROR, "must be 0 or 1"),
    ("maximum-qos-2", 5, "20 05 00 00 02 24 02", P, R.PROTOCOL_ERROR, "must be 0 or 1"),
    ("topic-alias-0", 5, "30 07 00 01 't' 03 23 00 00", P, R.PROTOCOL_ERROR, "must not be 0"),
    ("receive-maximum-0", 5, "10 10 00 04 'MQTT' 05 02 00 00 03 21 00 00 00 00", P, R.PROTOCOL_ERROR, "must not be 0"),
    ("subscription-identifier-0", 5, "30 06 00 01 't' 02 0b 00", P, R.PROTOCOL_ERROR, "Subscription Identifier is 0"),
    ("property-overruns-properties", 5, "30 08 00 01 't' 02 02 00 00 00", M, R.MALFORMED_PACKET, "remaining length ends inside"),
    ("property-length-overruns-packet", 5, "30 05 00 01 't' 09 01", M, R.MALFORMED_PACKET, "remaining length ends inside"),
    # Remaining length against content (section 2.1.4).
    ("remaining-length-too-short-for-topic", 4, "30 03 00 05 'abcde'", M, R.MALFORMED_PACKET, "remaining length ends inside"),
    ("remaining-length-too-short-for-packet-id", 4, "32 04 00 01 'a' 00", M, R.MALFORMED_PACKET, "remaining length ends inside"),
    ("puback-trailing-byte", 4, "40 03 00 01 ff", M, R.MALFORMED_PACKET, "after its last field"),
    ("puback-trailing-after-properties", 5, "40 05 00 01 00 00 ff", M, R.MALFORMED_PACKET, "after its last field"),
    ("pingreq-trailing-byte", 4, "c0 01 00", M, R.MALFORMED_PACKET, "after its last field"),
    ("disconnect-trailing-byte-v311", 4, "e0 01 00", M, R.MALFORMED_PACKET, "after its last field"),
    ("connect-trailing-byte", 4, "10 0d 00 04 'MQTT' 04 02 00 3c 00 00 ff", M, R.MALFORMED_PACKET, "after its last field"),
    ("connack-short", 4, "20 01 00", M, R.MALFORMED_PACKET, "remaining length ends inside"),
    ("unsuback-trailing-v311", 4, "b0 03 00 01 00", M, R.MALFORMED_PACKET, "after its last field"),
]


@pytest.mark.parametrize(
    ("level", "wire", "kind", "reason", "text"),
    [pytest.param(level, wire, kind, reason, text, id=name)
     for name, level, wire, kind, reason, text in CASES],
)
def test_rule_violation(level: int, wire: str, kind: type[ProtocolError], reason: ReasonCode,
                        text: str) -> None:
    with pytest.raises(ProtocolError) as info:
        Decoder(level).feed(h(wire))
    assert type(info.value) is kind
    assert info.value.reason_code == reason
    assert text in str(info.value)


def test_maximum_packet_size_counts_the_fixed_header() -> None:
    wire = h("30 09 00 01 't' '012345'")  # 11 bytes in all
    assert len(Decoder(4, max_packet_size=11).feed(wire)) == 1
    with pytest.raises(PacketTooLargeError) as info:
        Decoder(4, max_packet_size=10).feed(wire)
    assert info.value.reason_code == ReasonCode.PACKET_TOO_LARGE
    assert "[MQTT-3.2.2-15]" in str(info.value)
    assert isinstance(info.value, MalformedPacketError)


def test_too_large_is_refused_from_the_header_alone() -> None:
    decoder = Decoder(5, max_packet_size=1024)
    with pytest.raises(PacketTooLargeError):
        decoder.feed(h("30 ff 7f"))  # announces 16,383 bytes, sends none of them
    assert decoder.buffered == 0


def test_too_large_is_refused_when_the_header_arrives_in_pieces() -> None:
    decoder = Decoder(4, max_packet_size=100)
    assert decoder.feed(h("30")) == []
    with pytest.raises(PacketTooLargeError):
        decoder.feed(h("ff"))  # at least 128 bytes follow, whatever comes next
    decoder = Decoder(4, max_packet_size=200)
    assert decoder.feed(h("30 80")) == []  # 128 or more: may still fit
    assert decoder.buffered == 2
    with pytest.raises(PacketTooLargeError):
        decoder.feed(h("02"))  # 256
