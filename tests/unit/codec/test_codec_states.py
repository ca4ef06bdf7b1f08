"""The server-side connection state table (actorbroker.codec.states)."""

from __future__ import annotations

import pytest

from actorbroker.codec import PacketType, ProtocolError
from actorbroker.codec.states import (
    CHART_NAME,
    CHART_TITLE,
    CONNACK_SENT,
    INITIAL,
    TRANSITIONS,
    ConnectionState,
    next_state,
)

S = ConnectionState
CLIENT_PACKETS = ["PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP", "SUBSCRIBE",
                  "UNSUBSCRIBE", "PINGREQ", "AUTH"]
SERVER_PACKETS = ["CONNACK", "SUBACK", "UNSUBACK", "PINGRESP"]


def test_chart_names() -> None:
    assert CHART_NAME == "connection"
    assert CHART_TITLE
    assert INITIAL is S.AWAIT_CONNECT
    events = {event for _, event in TRANSITIONS}
    assert events <= {t.name for t in PacketType} | {CONNACK_SENT}


def test_happy_path() -> None:
    state = next_state(INITIAL, PacketType.CONNECT)
    assert state is S.AUTHENTICATING
    state = next_state(state, CONNACK_SENT)
    assert state is S.CONNECTED
    for name in CLIENT_PACKETS:
        state = next_state(state, name)
        assert state is S.CONNECTED
    assert next_state(state, "DISCONNECT") is S.CLOSED


def test_enhanced_authentication_exchange() -> None:
    state = next_state(INITIAL, "CONNECT")
    state = next_state(state, "AUTH")
    state = next_state(state, PacketType.AUTH)
    assert state is S.AUTHENTICATING
    assert next_state(state, CONNACK_SENT) is S.CONNECTED
    assert next_state(S.AUTHENTICATING, "DISCONNECT") is S.CLOSED


@pytest.mark.parametrize("event", [t.name for t in PacketType if t is not PacketType.CONNECT])
def test_nothing_before_connect(event: str) -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.1\.0-1\]"):
        next_state(S.AWAIT_CONNECT, event)


@pytest.mark.parametrize("state", [S.AUTHENTICATING, S.CONNECTED])
def test_no_second_connect(state: ConnectionState) -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.1\.0-2\]"):
        next_state(state, "CONNECT")


@pytest.mark.parametrize("event", [n for n in CLIENT_PACKETS if n != "AUTH"])
def test_only_auth_or_disconnect_while_authenticating(event: str) -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.1\.2-30\]"):
        next_state(S.AUTHENTICATING, event)


@pytest.mark.parametrize("state", [S.AUTHENTICATING, S.CONNECTED])
@pytest.mark.parametrize("event", SERVER_PACKETS)
def test_server_packets_from_a_client_are_illegal(state: ConnectionState, event: str) -> None:
    with pytest.raises(ProtocolError, match="server to client only") as info:
        next_state(state, event)
    assert info.value.reason_code == 0x82


def test_no_second_connack() -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.2\.0-2\]"):
        next_state(S.CONNECTED, CONNACK_SENT)


@pytest.mark.parametrize("event", [t.name for t in PacketType] + [CONNACK_SENT])
def test_nothing_after_disconnect(event: str) -> None:
    with pytest.raises(ProtocolError):
        next_state(S.CLOSED, event)


def test_packet_after_disconnect_cites_the_rule() -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.14\.4-1\]"):
        next_state(S.CLOSED, "PUBLISH")


def test_unknown_event() -> None:
    with pytest.raises(ProtocolError, match="unknown event"):
        next_state(S.CONNECTED, "HELLO")


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITIONS[(S.CLOSED, "CONNECT")] = S.CONNECTED  # type: ignore[index]
