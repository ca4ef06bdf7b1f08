"""MQTT 5 CONNECT/CONNACK: what the CONNACK tells, client ids, keep alive, redirection, takeover."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt5_testkit import Client5, connect5, expect_disconnect
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Disconnect,
    PingReq,
    PingResp,
    Properties,
    Publish,
    ReasonCode,
)
from actorbroker.config import Config

Clients5 = Callable[..., Client5]
Raw = Callable[..., RawClient]
Start = Callable[..., RunningBroker]


def test_connack_tells_the_defaults_and_nothing_the_spec_assumes(client5: Clients5) -> None:
    result = client5("c", connect=False).connect()
    assert result.rc == 0 and not result.session_present
    # Receive Maximum 20 and Topic Alias Maximum 10 (Mosquitto's defaults); Maximum QoS 2,
    # retain/wildcard/subscription-identifier/shared available: absent means so. Maximum
    # Packet Size: the 1 MiB default limit.
    assert result.properties == {"ReceiveMaximum": 20, "TopicAliasMaximum": 10,
                                 "MaximumPacketSize": 1024 * 1024}


def test_connack_tells_what_the_configuration_turns_off(start_broker: Start,
                                                         config5: Callable[..., Config],
                                                         client5: Clients5) -> None:
    running = start_broker(config5(
        limits={"max_qos": 1, "max_packet_size": 4096},
        retained={"enabled": False},
        mqtt5={"wildcard_subscriptions": False, "subscription_identifiers": False,
               "shared_subscriptions": False, "receive_maximum": 65535,
               "topic_alias_maximum": 0}))
    result = client5("c", connect=False, target=running).connect()
    assert result.properties == {
        "MaximumQoS": 1, "RetainAvailable": 0, "MaximumPacketSize": 4096,
        "WildcardSubscriptionAvailable": 0, "SubscriptionIdentifierAvailable": 0,
        "SharedSubscriptionAvailable": 0,
    }


def test_an_empty_client_id_is_assigned_and_told(client5: Clients5) -> None:
    result = client5("", connect=False).connect()
    assigned = result.properties["AssignedClientIdentifier"]
    assert result.rc == 0 and assigned.startswith("auto-")


def test_an_empty_client_id_with_clean_start_0_is_assigned_too(raw5: Raw) -> None:
    connack = connect5(raw5(), "", clean=False)  # unlike 3.1.1, [MQTT-3.1.3-6]
    assert isinstance(connack, ConnAck) and connack.reason_code == 0
    assert connack.properties.assigned_client_identifier


def test_clean_start_and_session_present(client5: Clients5) -> None:
    first = client5("sp", connect=False)
    assert first.connect(SessionExpiryInterval=60).session_present is False
    first.subscribe("x", 1)
    first.disconnect()
    again = client5("sp", connect=False)
    assert again.connect(clean_start=False, SessionExpiryInterval=60).session_present
    again.disconnect()
    fresh = client5("sp", connect=False)
    assert not fresh.connect(clean_start=True, SessionExpiryInterval=60).session_present


def test_session_expiry_above_the_maximum_is_capped_and_told(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(mqtt5={"max_session_expiry_interval": 300}))
    capped = client5("a", connect=False, target=running).connect(
        SessionExpiryInterval=0xFFFFFFFF)
    assert capped.properties["SessionExpiryInterval"] == 300
    kept = client5("b", connect=False, target=running).connect(SessionExpiryInterval=100)
    assert "SessionExpiryInterval" not in kept.properties  # the client's value stands


def test_server_keep_alive_from_the_configured_maximum(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(limits={"max_keepalive": 30}))
    too_long = client5("a", connect=False, target=running, keepalive=120).connect()
    assert too_long.rc == 0 and too_long.properties["ServerKeepAlive"] == 30
    none = client5("b", connect=False, target=running, keepalive=0).connect()
    assert none.properties["ServerKeepAlive"] == 30
    within = client5("c", connect=False, target=running, keepalive=20).connect()
    assert "ServerKeepAlive" not in within.properties


def test_the_server_keep_alive_is_enforced(start_broker: Start, config5: Callable[..., Config],
                                           raw5: Raw) -> None:
    running = start_broker(config5(limits={"max_keepalive": 10}))
    r = raw5(running)
    connack = connect5(r, "ka", keepalive=0)  # asks for none, is given 10 s
    assert isinstance(connack, ConnAck) and connack.properties.server_keep_alive == 10
    r.send(PingReq())
    assert r.recv() == PingResp()
    # Silent for 1.5 x 10 s: DISCONNECT 0x8D, Keep Alive timeout ([MQTT-3.1.2-22]).
    assert expect_disconnect(r, timeout=20).reason_code == ReasonCode.KEEP_ALIVE_TIMEOUT


def test_keepalive_timeout_is_0x8d(raw5: Raw) -> None:
    r = raw5()
    assert isinstance(connect5(r, "ka1", keepalive=1), ConnAck)
    assert expect_disconnect(r).reason_code == ReasonCode.KEEP_ALIVE_TIMEOUT


def test_response_information_from_the_configured_prefix(
        start_broker: Start, config5: Callable[..., Config], client5: Clients5) -> None:
    running = start_broker(config5(mqtt5={"response_information_prefix": "replies/"}))
    asked = client5("rr", connect=False, target=running).connect(RequestResponseInformation=1)
    assert asked.properties["ResponseInformation"] == "replies/rr"
    not_asked = client5("rr2", connect=False, target=running).connect()
    assert "ResponseInformation" not in not_asked.properties


def test_no_response_information_without_a_prefix(client5: Clients5) -> None:
    asked = client5("rr", connect=False).connect(RequestResponseInformation=1)
    assert "ResponseInformation" not in asked.properties


def test_user_properties_on_connect_are_accepted(client5: Clients5) -> None:
    result = client5("up", connect=False).connect(UserProperty=[("a", "1"), ("a", "2")])
    assert result.rc == 0


def test_takeover_disconnects_the_old_connection_with_0x8e(client5: Clients5) -> None:
    old = client5("same")
    client5("same")
    assert old.wait_disconnect() == ReasonCode.SESSION_TAKEN_OVER


ALIAS_TOO_HIGH = Publish("a", b"", 0, properties=Properties(topic_alias=11))  # above 10: 0x94


@pytest.mark.parametrize(("packet", "code", "rule"), [
    (ALIAS_TOO_HIGH, ReasonCode.TOPIC_ALIAS_INVALID, "[MQTT-3.3.2-9]"),  # the session's rule
    (Publish("a/#", b"", 0), ReasonCode.TOPIC_NAME_INVALID, "[MQTT-3.3.2-2]"),  # the codec's
])
def test_reason_strings_only_when_problem_information_is_allowed(
        raw5: Raw, packet: Publish, code: ReasonCode, rule: str) -> None:
    told = raw5()
    connect5(told, "rs1")
    told.send(packet)
    with_reason = expect_disconnect(told)
    assert with_reason.reason_code == code
    assert rule in (with_reason.properties.reason_string or "")
    quiet = raw5()
    connect5(quiet, "rs2", request_problem_information=0)
    quiet.send(packet)
    assert expect_disconnect(quiet) == Disconnect(code)  # no Reason String


def test_server_moved_refuses_new_clients_with_the_reference(
        start_broker: Start, config5: Callable[..., Config], raw5: Raw, raw: Raw) -> None:
    running = start_broker(config5(mqtt5={"server_reference": "other.example:1883",
                                          "redirect": "server_moved"}))
    r = raw5(running)
    connack = connect5(r, "m")
    assert isinstance(connack, ConnAck) and connack.reason_code == ReasonCode.SERVER_MOVED
    assert connack.properties.server_reference == "other.example:1883"
    r.expect_closed()
    v3 = raw(target=running)
    assert v3.connect("m3") == ConnAck(False, 0x03)  # 3.x: server unavailable


def test_use_another_server_at_shutdown(start_broker: Start, config5: Callable[..., Config],
                                        client5: Clients5, client: Callable[..., Client]) -> None:
    running = start_broker(config5(mqtt5={"server_reference": "b.example"}))
    v5 = client5("u", target=running)
    client("u3", target=running)  # MQTT 3 clients are just closed
    running.run(running.broker.stop())
    assert v5.wait_disconnect() == ReasonCode.USE_ANOTHER_SERVER
    assert v5.disconnect_properties["ServerReference"] == "b.example"


def test_shutdown_is_0x8b(start_broker: Start, config5: Callable[..., Config],
                          client5: Clients5) -> None:
    running = start_broker(config5())
    v5 = client5("s", target=running)
    running.run(running.broker.stop())
    assert v5.wait_disconnect() == ReasonCode.SERVER_SHUTTING_DOWN


def test_a_refusing_connack_explains_itself_unless_told_not_to(raw5: Raw) -> None:
    refused = connect5(raw5(), "a", authentication_method="NOPE")
    assert isinstance(refused, ConnAck)
    assert refused.reason_code == ReasonCode.BAD_AUTHENTICATION_METHOD
    assert "'NOPE' not served" in (refused.properties.reason_string or "")
    silent = connect5(raw5(), "b", authentication_method="NOPE", request_problem_information=0)
    assert silent == ConnAck(False, ReasonCode.BAD_AUTHENTICATION_METHOD)
