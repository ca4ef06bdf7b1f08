"""Session layer: whether to accept a CONNECT, and as which client id. Stdlib, codec and routing only.

Applied once per connection, after the decoder produced a well-formed
CONNECT and before the session actor of the client id is looked up (the
client id may be assigned here). The rules, in the order they are checked:

1. Protocol level: one the broker does not serve gets return code 0x01
   (Unacceptable protocol version, [MQTT-3.1.2-2]; 0x84 at level 5).
2. Client identifier:
   * MQTT 3.1 (level 3): 1 to 23 characters, else 0x02 (Identifier rejected);
   * MQTT 3.1.1 (level 4): at most ``max_client_id_length`` UTF-8 bytes
     ([MQTT-3.1.3-5] requires accepting 1..23); a zero-length id is given a
     unique one when Clean Session is 1 ([MQTT-3.1.3-6]) and refused with
     0x02 when it is 0 ([MQTT-3.1.3-8]) or when the policy forbids empty ids;
   * MQTT 5 (level 5): a zero-length id is assigned one whatever Clean Start
     says ([MQTT-3.1.3-6]), the caller returns it in the CONNACK's Assigned
     Client Identifier.
3. Will: a valid topic name, a QoS the broker grants, and RETAIN only if
   retained messages are available. 3.x has no return code for these: the
   connection is closed without CONNACK; MQTT 5 sends 0x90, 0x9B or 0x9A
   ([MQTT-3.2.2-12], [MQTT-3.2.2-13]).
4. Authentication: the ``authenticate`` hook (the auth package plugs in
   here) returns ACCEPTED or the refusal code (0x04 Bad user name or
   password, 0x05 Not authorized). Without a hook everyone is accepted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from actorbroker.codec import ConnAck, Connect, ConnectReturnCode, ReasonCode
from actorbroker.routing import TopicError, validate_topic_name

__all__ = [
    "Accepted",
    "Authenticator",
    "ConnectDecision",
    "ConnectPolicy",
    "Refused",
    "check_connect",
    "new_client_id",
    "refuse",
]

#: ``authenticate(client_id, connect)`` -> ACCEPTED or the return code to refuse with.
Authenticator = Callable[[str, Connect], ConnectReturnCode]

_RC = ConnectReturnCode
#: The MQTT 5 reason code that says what each 3.x return code says.
_V5_REASON = {
    _RC.UNACCEPTABLE_PROTOCOL_VERSION: ReasonCode.UNSUPPORTED_PROTOCOL_VERSION,
    _RC.IDENTIFIER_REJECTED: ReasonCode.CLIENT_IDENTIFIER_NOT_VALID,
    _RC.SERVER_UNAVAILABLE: ReasonCode.SERVER_UNAVAILABLE,
    _RC.BAD_USER_NAME_OR_PASSWORD: ReasonCode.BAD_USER_NAME_OR_PASSWORD,
    _RC.NOT_AUTHORIZED: ReasonCode.NOT_AUTHORIZED,
}


@dataclass(frozen=True, slots=True)
class ConnectPolicy:
    """What the broker accepts in a CONNECT.

    ``allow_empty_client_id`` is Mosquitto's ``allow_zero_length_clientid``;
    ``assigned_id_prefix`` starts every id the broker makes up.
    """

    protocol_levels: frozenset[int] = frozenset({3, 4})
    max_client_id_length: int = 65535
    v31_max_client_id_length: int = 23
    allow_empty_client_id: bool = True
    assigned_id_prefix: str = "auto-"
    max_qos: int = 2
    retain_available: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.max_client_id_length <= 65535:
            raise ValueError("max_client_id_length must be in 1..65535")
        if not 1 <= self.v31_max_client_id_length <= 65535:
            raise ValueError("v31_max_client_id_length must be in 1..65535")
        if self.max_qos not in (0, 1, 2):
            raise ValueError(f"max_qos must be 0, 1 or 2, not {self.max_qos!r}")


@dataclass(frozen=True, slots=True)
class Accepted:
    """Accept the connection as ``client_id`` (``assigned``: the broker made it up)."""

    client_id: str
    assigned: bool
    connect: Connect


@dataclass(frozen=True, slots=True)
class Refused:
    """Refuse the connection: send ``connack`` if not None, then close.

    ``return_code`` is the 3.x return code the refusal means (None when the
    CONNECT broke a rule that has none, and no CONNACK is sent at 3.x);
    ``reason`` is a log line with the spec rule id.
    """

    return_code: ConnectReturnCode | None
    reason: str
    connack: ConnAck | None


ConnectDecision = Accepted | Refused


def new_client_id(prefix: str = "auto-") -> str:
    """A client id unique with overwhelming probability (128 random bits)."""
    return prefix + uuid.uuid4().hex


def refuse(connect: Connect, code: ConnectReturnCode, reason: str) -> Refused:
    """The refusal with 3.x return ``code`` (MQTT 5: the reason code that says the same)."""
    level = connect.protocol_level
    wire = _V5_REASON[code] if level == 5 else code
    return Refused(code, reason, ConnAck(False, wire))


def _close(connect: Connect, v5_reason: ReasonCode, reason: str) -> Refused:
    """A refusal 3.x has no return code for: v5 gets a CONNACK, 3.x just a close."""
    connack = ConnAck(False, v5_reason) if connect.protocol_level == 5 else None
    return Refused(None, reason, connack)


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _check_client_id(
    connect: Connect, policy: ConnectPolicy, make_id: Callable[[], str]
) -> Accepted | Refused:
    client_id, level = connect.client_id, connect.protocol_level
    length = _utf8_length(client_id)
    if level == 3:
        if not 1 <= length <= policy.v31_max_client_id_length:
            return refuse(connect, _RC.IDENTIFIER_REJECTED,
                           f"MQTT 3.1 client identifier must be 1 to"
                           f" {policy.v31_max_client_id_length} characters, got {length}")
        return Accepted(client_id, False, connect)
    if length > policy.max_client_id_length:
        return refuse(connect, _RC.IDENTIFIER_REJECTED,
                       f"[MQTT-3.1.3-5] client identifier of {length} bytes is longer than"
                       f" the {policy.max_client_id_length} this broker accepts")
    if length:
        return Accepted(client_id, False, connect)
    if not policy.allow_empty_client_id:
        return refuse(connect, _RC.IDENTIFIER_REJECTED,
                       "[MQTT-3.1.3-6] zero-length client identifier not allowed here")
    if level == 4 and not connect.clean_start:
        return refuse(connect, _RC.IDENTIFIER_REJECTED,
                       "[MQTT-3.1.3-8] zero-length client identifier with Clean Session 0")
    return Accepted(make_id(), True, connect)


def _check_will(connect: Connect, policy: ConnectPolicy) -> Refused | None:
    will = connect.will
    if will is None:
        return None
    try:
        validate_topic_name(will.topic)
    except TopicError as exc:
        return _close(connect, ReasonCode.TOPIC_NAME_INVALID,
                      f"[MQTT-3.1.4-1] invalid Will Topic: {exc}")
    if will.qos > policy.max_qos:
        return _close(connect, ReasonCode.QOS_NOT_SUPPORTED,
                      f"[MQTT-3.2.2-12] Will QoS {will.qos} above the maximum {policy.max_qos}")
    if will.retain and not policy.retain_available:
        return _close(connect, ReasonCode.RETAIN_NOT_SUPPORTED,
                      "[MQTT-3.2.2-13] Will Retain set but retained messages are not available")
    return None


def check_connect(
    connect: Connect,
    policy: ConnectPolicy = ConnectPolicy(),
    *,
    authenticate: Authenticator | None = None,
    make_client_id: Callable[[], str] | None = None,
) -> ConnectDecision:
    """Decide on ``connect``: :class:`Accepted` or :class:`Refused` (see the module doc).

    ``make_client_id`` returns a fresh id for an empty one (default:
    :func:`new_client_id` with the policy's prefix); ``authenticate`` sees the
    final client id.
    """
    if connect.protocol_level not in policy.protocol_levels:
        return refuse(connect, _RC.UNACCEPTABLE_PROTOCOL_VERSION,
                       f"[MQTT-3.1.2-2] protocol level {connect.protocol_level} not served"
                       f" (served: {sorted(policy.protocol_levels)})")
    make_id = make_client_id or (lambda: new_client_id(policy.assigned_id_prefix))
    decision = _check_client_id(connect, policy, make_id)
    if isinstance(decision, Refused):
        return decision
    refused = _check_will(connect, policy)
    if refused is not None:
        return refused
    if authenticate is not None:
        code = ConnectReturnCode(authenticate(decision.client_id, connect))
        if code is not _RC.ACCEPTED:
            return refuse(connect, code, f"authentication refused {decision.client_id!r}:"
                                          f" {code.name}")
    return decision
