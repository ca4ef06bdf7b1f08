"""Session layer: the MQTT 5 CONNECT/CONNACK negotiation, as pure functions. Stdlib and codec only.

What an MQTT 5 client asks for in CONNECT meets what the broker allows
(:class:`~actorbroker.session.capabilities.Mqtt5Policy`), and the CONNACK
tells the client the outcome (section 3.2.2.3):

* Session Expiry Interval: the client's, capped by ``max_session_expiry``;
  told back only when the broker keeps a different one (section 3.2.2.3.2:
  without it the client uses the value it sent). 0xFFFFFFFF never expires.
* Keep Alive: one above ``max_keepalive``, or 0 (none), becomes
  ``max_keepalive``, told as Server Keep Alive ([MQTT-3.2.2-21]).
* Receive Maximum, Maximum QoS, Retain Available, Maximum Packet Size, Topic
  Alias Maximum, Wildcard / Subscription Identifier / Shared Subscription
  Available: told when they differ from what the spec assumes when absent.
* Assigned Client Identifier when the broker made the id up
  ([MQTT-3.2.2-16]); Response Information when asked for and configured;
  Authentication Method and Data when the connection authenticated with
  enhanced authentication (section 4.12).

The Will Delay Interval ([MQTT-3.1.3-9]) waits before a Will is published,
but never past the end of the session.
"""

from __future__ import annotations

from actorbroker.codec import Connect, Properties, Will

from .capabilities import NEVER_EXPIRES, Mqtt5Policy

__all__ = ["connack_properties", "negotiate_expiry", "server_keep_alive", "will_delay"]


def negotiate_expiry(requested: int, maximum: int | None) -> tuple[float | None, int | None]:
    """(seconds the session is kept after its connection: None never, 0 not at all;
    the Session Expiry Interval to tell in CONNACK, None when it is the client's)."""
    used = requested if maximum is None or maximum == NEVER_EXPIRES else min(requested, maximum)
    told = used if used != requested else None
    return (None if used == NEVER_EXPIRES else float(used)), told


def server_keep_alive(requested: int, maximum: int) -> int | None:
    """The Server Keep Alive to impose, None when the client's Keep Alive stands."""
    if requested == 0 or requested > maximum:
        return maximum
    return None


def will_delay(will: Will, session_expiry: float | None) -> float:
    """Seconds before ``will`` is published: its Will Delay Interval, at most the session's life."""
    delay = float(will.properties.will_delay_interval or 0)
    return delay if session_expiry is None else min(delay, session_expiry)


def connack_properties(
    connect: Connect,
    policy: Mqtt5Policy,
    *,
    client_id: str,
    assigned: bool,
    max_qos: int,
    retain_available: bool,
    expiry_told: int | None,
    keep_alive_told: int | None,
    auth_data: bytes | None = None,
) -> Properties:
    """The properties of the CONNACK accepting ``connect`` (see the module doc)."""
    props = connect.properties
    response = None
    if props.request_response_information == 1 and policy.response_information_prefix:
        response = policy.response_information_prefix + client_id
    method = props.authentication_method
    return Properties(
        session_expiry_interval=expiry_told,
        assigned_client_identifier=client_id if assigned else None,
        server_keep_alive=keep_alive_told,
        authentication_method=method,
        authentication_data=auth_data if method is not None else None,
        response_information=response,
        receive_maximum=policy.receive_maximum if policy.receive_maximum < 65535 else None,
        topic_alias_maximum=policy.topic_alias_maximum or None,
        maximum_qos=max_qos if max_qos < 2 else None,
        retain_available=None if retain_available else 0,
        maximum_packet_size=policy.max_packet_size_told,
        wildcard_subscription_available=None if policy.wildcard_available else 0,
        subscription_identifier_available=None if policy.subscription_ids_available else 0,
        shared_subscription_available=None if policy.shared_available else 0,
    )
