"""The pure pieces of the transport, without sockets: InboundGate and sniff_level.

(They live here with the transport's other tests; they need no loop.)
"""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    Properties,
    Publish,
    SubAck,
    encode,
)
from actorbroker.codec.states import ConnectionState as S
from actorbroker.transport.gate import InboundGate, sniff_level

CONNECT4 = Connect("MQTT", 4, "c", True, 0)
CONNECT5_AUTH = Connect("MQTT", 5, "c", True, 0, properties=Properties(authentication_method="X"))


def test_connect_then_pipelined_packets_are_held_until_an_accepting_connack() -> None:
    gate = InboundGate()
    plan = gate.route([CONNECT4, PingReq(), Publish("t", b"x")])
    assert plan.connect == CONNECT4 and plan.deliver == [] and plan.error is None
    assert gate.state is S.AUTHENTICATING and gate.held == [PingReq(), Publish("t", b"x")]
    assert gate.release() == []  # nothing before CONNACK
    gate.connack(0)
    assert gate.state is S.CONNECTED
    assert gate.release() == [PingReq(), Publish("t", b"x")] and gate.held == []


def test_a_refusing_connack_drops_the_held_packets() -> None:
    gate = InboundGate()
    gate.route([CONNECT4, Publish("t", b"x")])
    gate.connack(0x05)
    assert gate.release() == [] and gate.held == [] and gate.state is S.AUTHENTICATING
    assert gate.farewell(0x8B) is None  # a CONNACK already went out


def test_once_something_is_held_everything_after_it_waits_too() -> None:
    gate = InboundGate()
    gate.route([CONNECT4, Publish("t", b"x"), Disconnect()])
    assert gate.held == [Publish("t", b"x"), Disconnect()]
    gate.connack(0)
    plan = gate.route(gate.release())
    assert plan.deliver == [Publish("t", b"x"), Disconnect()] and plan.disconnected


def test_auth_and_disconnect_pass_before_connack_when_nothing_is_held() -> None:
    gate = InboundGate()
    plan = gate.route([CONNECT5_AUTH, Auth(0x19)])
    assert plan.deliver == [Auth(0x19)] and gate.held == []
    plan = gate.route([Disconnect(), PingReq()])
    assert plan.deliver == [Disconnect()] and plan.disconnected and gate.state is S.CLOSED


def test_with_an_authentication_method_other_packets_before_connack_are_errors() -> None:
    gate = InboundGate()
    plan = gate.route([CONNECT5_AUTH, Auth(0x19), Publish("t", b"x")])
    assert plan.deliver == [Auth(0x19)]
    assert plan.error is not None and "[MQTT-3.1.2-30]" in str(plan.error)


@pytest.mark.parametrize(("packets", "rule"), [
    ([PingReq()], "[MQTT-3.1.0-1]"),
    ([CONNECT4, CONNECT4], "[MQTT-3.1.0-2]"),
])
def test_order_violations_come_back_as_errors_not_exceptions(packets, rule) -> None:
    gate = InboundGate()
    if packets[0] is CONNECT4 and len(packets) > 1:
        gate.route([CONNECT4])
        gate.connack(0)
        packets = packets[1:]
    plan = gate.route(packets)
    assert plan.error is not None and rule in str(plan.error)


def test_connected_packets_keep_the_state_and_server_only_ones_are_refused() -> None:
    gate = InboundGate()
    gate.route([CONNECT4])
    gate.connack(0)
    batch = [PingReq(), Publish("a", b"1"), Publish("b", b"2")]
    plan = gate.route(batch)
    assert plan.deliver == batch and plan.error is None and gate.state is S.CONNECTED
    plan = gate.route([PingReq(), SubAck(1, (0,))])
    assert plan.deliver == [PingReq()] and plan.error is not None
    assert plan.error.reason_code == 0x82


@pytest.mark.parametrize(("connack_ok", "state", "code", "expected"), [
    (True, S.CONNECTED, 0x8D, Disconnect(0x8D)),
    (True, S.CONNECTED, 0x84, Disconnect(0x80)),  # 0x84 cannot travel in a DISCONNECT
    (True, S.CLOSED, 0x8B, None),                  # the client said DISCONNECT first
    (False, S.AUTHENTICATING, 0x81, ConnAck(False, 0x81)),
    (False, S.AUTHENTICATING, 0x8D, ConnAck(False, 0x80)),  # not a CONNACK code
    (False, S.AUTHENTICATING, 0x00, None),         # success is no farewell
])
def test_farewell(connack_ok, state, code, expected) -> None:
    gate = InboundGate()
    gate.connack_ok = gate.connack_sent = connack_ok
    gate.state = state
    assert gate.farewell(code) == expected
    assert gate.farewell(code) == (expected if isinstance(expected, Disconnect) else None)


@pytest.mark.parametrize(("head", "level"), [
    (encode(Connect("MQTT", 5, "x", True, 0), 5), 5),
    (encode(Connect("MQTT", 4, "x", True, 0), 4), 4),
    (encode(Connect("MQIsdp", 3, "x", True, 0), 3), 3),
    (b"\x10\xff\xff\x01\x00\x04MQTT\x05", 5),  # three-byte remaining length
    (b"\x10\x0d\x00\x04MQTT\x07", 7),          # unsupported, but visible
    (b"\x10\x0d\x00\x04MQ", None),             # too short
    (b"\x20\x02\x00\x00", None),               # not a CONNECT
    (b"", None),
])
def test_sniff_level(head, level) -> None:
    assert sniff_level(head[:16]) == level
