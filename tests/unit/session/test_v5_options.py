"""MQTT 5 negotiation and subscription options: pure functions."""

from __future__ import annotations

from actorbroker.codec import Connect, Properties, Subscription, Will
from actorbroker.session.capabilities import NEVER_EXPIRES, Mqtt5Policy
from actorbroker.session.negotiation import (
    connack_properties,
    negotiate_expiry,
    server_keep_alive,
    will_delay,
)
from actorbroker.session.suboptions import Selected, SubOptions, select


def test_session_expiry_negotiation() -> None:
    assert negotiate_expiry(0, None) == (0.0, None)
    assert negotiate_expiry(60, None) == (60.0, None)
    assert negotiate_expiry(NEVER_EXPIRES, None) == (None, None)  # never expires
    assert negotiate_expiry(NEVER_EXPIRES, 300) == (300.0, 300)  # capped: told in CONNACK
    assert negotiate_expiry(100, 300) == (100.0, None)
    assert negotiate_expiry(100, NEVER_EXPIRES) == (100.0, None)


def test_server_keep_alive() -> None:
    assert server_keep_alive(60, 120) is None
    assert server_keep_alive(200, 120) == 120
    assert server_keep_alive(0, 120) == 120  # none asked: the maximum is imposed


def test_will_delay_never_outlives_the_session() -> None:
    will = Will("w", b"", properties=Properties(will_delay_interval=30))
    assert will_delay(will, None) == 30
    assert will_delay(will, 10.0) == 10
    assert will_delay(Will("w", b""), 10.0) == 0


def test_connack_properties() -> None:
    connect = Connect("MQTT", 5, "", True, 0, properties=Properties(
        request_response_information=1, authentication_method="SCRAM-SHA-256"))
    policy = Mqtt5Policy(response_information_prefix="r/", receive_maximum=65535,
                         topic_alias_maximum=0, max_packet_size=1000, shared_available=False)
    props = connack_properties(connect, policy, client_id="auto-1", assigned=True, max_qos=1,
                               retain_available=False, expiry_told=5, keep_alive_told=30,
                               auth_data=b"v=x")
    assert props == Properties(
        session_expiry_interval=5, assigned_client_identifier="auto-1", server_keep_alive=30,
        authentication_method="SCRAM-SHA-256", authentication_data=b"v=x",
        response_information="r/auto-1", maximum_qos=1, retain_available=0,
        maximum_packet_size=1000, shared_subscription_available=0)


def test_sub_options_only_when_there_is_one() -> None:
    assert SubOptions.of(Subscription("a", 1), None) is None
    assert SubOptions.of(Subscription("a", 1, no_local=True), None) == SubOptions(True)
    assert SubOptions.of(Subscription("a", 1), 9) == SubOptions(subscription_id=9)


def test_select_one_copy_per_client() -> None:
    matches = [(1, SubOptions(subscription_id=4)), (2, None), (0, SubOptions(True, True, 2))]
    # Highest QoS; every identifier, ascending; Retain As Published if one asks.
    assert select(matches, "other", "me") == Selected(2, (2, 4), True)
    # No Local drops its subscription for the client's own messages ([MQTT-3.8.3-3]).
    assert select(matches, "me", "me") == Selected(2, (4,), False)
    assert select([(1, SubOptions(no_local=True))], "me", "me") is None
    assert select([(1, SubOptions(no_local=True))], None, "me") == Selected(1, (), False)
