"""Refusing QoS 1/2 PUBLISHes the commit log could not store (a full disk, an I/O error).

MQTT 5 answers each with PUBACK/PUBREC carrying the storage's reason code and
a Reason String (only if the client allows problem information); MQTT 3 has
no refusing acknowledgement, so the broker sends none and closes the
connection: the client resends after reconnecting ([MQTT-4.4.0-1]). A
refused QoS 2 packet id is free again: the client's retry is a new message,
routed, not taken for a duplicate. The packets are compared byte for byte
with the wire form the broker has always written.
"""

from __future__ import annotations

import pytest

from actorbroker.codec import (Connect, Packet, Properties, PubAck, PubRec, Publish, ReasonCode,
                               encode)
from actorbroker.session import Close, Effect, Route, Send, SessionCore

DISK_FULL = "not stored: disk full"


def attached(level: int, **props: int) -> SessionCore:
    core = SessionCore("pub")
    core.attach(Connect("MQTT", level, "pub", True, 0, properties=Properties(**props)), 0.0)
    return core


def publishes(core: SessionCore, *ids_and_qos: tuple[int, int]) -> list[Effect]:
    """The core's effects for one read of QoS 1/2 PUBLISHes (``(packet id, qos)`` each)."""
    packets = [Publish("t", b"x", qos, packet_id=pid) for pid, qos in ids_and_qos]
    return core.handle_all(packets, 1.0)


def refuse(core: SessionCore, effects: list[Effect], code: int = 0x97,
           reason: str = "disk full") -> list[Effect]:
    """Refuse the routes of ``effects``: what the broker carries out instead."""
    acks = [e.ack for e in effects if isinstance(e, Route) and e.ack is not None]
    refusals = core.refuse_unstored(acks, code, reason)
    assert all(isinstance(e, Send) for e in refusals[:len(acks)])  # one in place of each ack
    return refusals


def wire(core: SessionCore, effects: list[Effect]) -> list[bytes]:
    """Each packet the effects send, as written on the connection."""
    packets: list[Packet] = [p for e in effects if isinstance(e, Send) for p in e.packets]
    return [encode(p, core.protocol_level) for p in packets]


def closes(effects: list[Effect]) -> list[Close]:
    return [e for e in effects if isinstance(e, Close)]


@pytest.mark.parametrize("level", [3, 4])
@pytest.mark.parametrize("code, closed_with", [
    (0x97, ReasonCode.QUOTA_EXCEEDED),
    (0x80, ReasonCode.UNSPECIFIED_ERROR),
    (0x83, ReasonCode.UNSPECIFIED_ERROR),  # only 0x97 and 0x80 name the storage's trouble
])
def test_mqtt3_gets_no_acknowledgement_and_one_close(level: int, code: int,
                                                     closed_with: ReasonCode) -> None:
    core = attached(level)
    effects = refuse(core, publishes(core, (1, 1), (2, 2), (3, 1)), code)
    assert wire(core, effects) == []
    assert not any(isinstance(e, Route) for e in effects)
    [close] = closes(effects)
    assert close.reason_code == closed_with
    assert "not stored (disk full)" in close.reason and "[MQTT-4.4.0-1]" in close.reason
    assert effects[-1] is close  # after the places of the acknowledgements


def test_nothing_to_refuse_closes_nothing() -> None:
    core = attached(4)
    assert refuse(core, []) == []


@pytest.mark.parametrize("qos, first", [(1, "40"), (2, "50")])
def test_mqtt5_gets_the_code_and_a_reason_string(qos: int, first: str) -> None:
    core = attached(5)
    effects = refuse(core, publishes(core, (7, qos)))
    # fixed header, packet id 7, 0x97, properties: Reason String (0x1F) "not stored: disk full"
    assert wire(core, effects) == [bytes.fromhex(first + "1c000797181f0015") + DISK_FULL.encode()]
    assert closes(effects) == []


def test_mqtt5_each_publish_of_the_read_is_refused_in_order() -> None:
    core = attached(5)
    effects = refuse(core, publishes(core, (1, 1), (2, 2), (3, 1)), 0x80)
    assert [(type(p), p.packet_id, p.reason_code, p.properties.reason_string)
            for e in effects if isinstance(e, Send) for p in e.packets
            if isinstance(p, (PubAck, PubRec))] == [
        (PubAck, 1, 0x80, DISK_FULL), (PubRec, 2, 0x80, DISK_FULL), (PubAck, 3, 0x80, DISK_FULL)]


def test_mqtt5_without_problem_information_gets_the_code_alone() -> None:
    core = attached(5, request_problem_information=0)
    effects = refuse(core, publishes(core, (7, 1)))
    assert wire(core, effects) == [bytes.fromhex("4003000797")]  # [MQTT-3.1.2-29]


def test_mqtt5_reason_string_is_cut_to_200_characters() -> None:
    core = attached(5)
    effects = refuse(core, publishes(core, (7, 1)), reason="x" * 500)
    [ack] = [p for e in effects if isinstance(e, Send) for p in e.packets]
    assert isinstance(ack, PubAck)
    assert ack.properties.reason_string == "not stored: " + "x" * 188


def test_mqtt5_connection_gone_before_the_answer_gets_the_code_alone() -> None:
    core = SessionCore("pub")
    connect = Connect("MQTT", 5, "pub", False, 0,
                      properties=Properties(session_expiry_interval=60))
    core.attach(connect, 0.0)
    effects = publishes(core, (7, 1))
    core.detach(2.0)  # no connection, no Link: nothing negotiated to check a Reason String by
    assert wire(core, refuse(core, effects)) == [bytes.fromhex("4003000797")]


@pytest.mark.parametrize("level", [4, 5])
def test_a_refused_qos2_packet_id_is_free_again(level: int) -> None:
    core = attached(level)
    refuse(core, publishes(core, (7, 2)))
    assert 7 not in core.inbound_qos2
    retry = publishes(core, (7, 2))  # not a duplicate: the first was never stored
    assert [(type(e), e.ack) for e in retry] == [(Route, PubRec(7))]
    assert 7 in core.inbound_qos2


def test_an_unrefused_qos2_retry_is_a_duplicate() -> None:
    """The contrast of the test above: the same retry without a refusal is not routed."""
    core = attached(4)
    publishes(core, (7, 2))
    assert publishes(core, (7, 2)) == [Send((PubRec(7),))]


def test_a_refused_qos1_keeps_the_other_qos2_ids() -> None:
    core = attached(5)
    publishes(core, (3, 2))  # stored earlier, awaiting PUBREL
    refuse(core, publishes(core, (4, 1), (5, 2)))
    assert core.inbound_qos2 == frozenset({3})


@pytest.mark.parametrize("limit, sent", [
    (30, bytes.fromhex("401c000797181f0015") + DISK_FULL.encode()),  # exactly its size
    (29, bytes.fromhex("4003000797")),  # one byte short: the code alone ([MQTT-3.4.2-2])
], ids=["fits", "one-byte-over"])
def test_mqtt5_reason_string_only_within_the_clients_maximum_packet_size(limit: int,
                                                                         sent: bytes) -> None:
    core = attached(5, maximum_packet_size=limit)
    assert wire(core, refuse(core, publishes(core, (7, 1)))) == [sent]


def test_mqtt5_pubrec_reason_string_only_within_the_clients_maximum_packet_size() -> None:
    core = attached(5, maximum_packet_size=16)
    assert wire(core, refuse(core, publishes(core, (7, 2)))) == [bytes.fromhex("5003000797")]
