"""Session layer: whether to accept a CONNECT, and as which client id. Stdlib, codec and routing only.

Every rule that decides a CONNECT's CONNACK, in the order they are checked:
the first one a CONNECT breaks refuses it, with the code of its row. Rows 1
to 5 are pure and run in :func:`decide`; rows 6 to 11 need the node's state
and run in ``actors.connect.login.Login``; row 12 (:func:`auth_method_served`) and
the rest come after the login. Every refusing CONNACK, wherever its rule
is checked, is built by :func:`refuse` here.

== ====================================== ======== ============= ===================================
#  check                                  3.x      5             where its state lives
== ====================================== ======== ============= ===================================
1  the node moved for good                0x03     0x9D, Server  ``ConnectPolicy.server_moved`` and
                                                   Reference     ``server_reference`` (:func:`moved`)
2  protocol level not served              0x01     0x84          ``ConnectPolicy.protocol_levels``
3  client identifier (below)              0x02     0x85          ``ConnectPolicy`` (lengths, empty id)
4  Will topic, QoS, Retain                close    0x90, 0x9B,   ``ConnectPolicy.max_qos`` and
                                                   0x9A          ``retain_available``
5  keepalive above ``max_keepalive``      0x02     negotiated    ``ConnectPolicy.max_keepalive``
                                                                 (:func:`keepalive_limit`)
6  address failed too often (throttle)    0x04 *   0x86 *        ``Login.throttle`` (per address)
7  user name and password                 0x04 *   0x86 *        the user file, checked off the loop
                                                                 (``actors.connect.password_checks``)
8  anonymous client                       0x05     0x87          ``[auth] allow_anonymous``
9  user name as client id, none given     0x05     0x87          ``[auth]`` use_username_as_clientid
10 client id pattern                      0x05     0x87          ``[auth] client_id_patterns``
-  Will topic the ACL refuses             accepted, its Will     ``[auth] acl_file``
                                          dropped
11 session owned by another user          0x05     0x87          ``actors.connect.owners.Owners``
12 Authentication Method not served       -        0x8C          ``[auth]``'s methods
                                                                 (:func:`auth_method_served`)
13 enhanced authentication fails          -        0x87, 0x82    ``actors.connect.enhanced_auth.AuthPort``
14 session owned by another user (after   -        0x87          ``actors.connect.owners.Owners``
   the exchange)
15 the session actor could not start      0x03     0x88          ``actors.connect.gateway`` (the start)
== ====================================== ======== ============= ===================================

``*``: sent after ``[auth] login_failure_delay`` (:attr:`Refused.delay`).
"close": 3.x has no return code for it, the connection is closed without
CONNACK. Rows 6 to 8 and 11 are skipped for an MQTT 5 CONNECT naming an
Authentication Method (its exchange, rows 13 and 14, decides who it is) and
rows 6 to 8 for a client certificate's user (``identity``, verified by TLS).
``tests/integration/security/test_connect_order.py`` checks this order.

Row 3, the client identifier:

* MQTT 3.1 (level 3): 1 to 23 characters, else 0x02 (Identifier rejected);
* MQTT 3.1.1 (level 4): at most ``max_client_id_length`` UTF-8 bytes
  ([MQTT-3.1.3-5] requires accepting 1..23); a zero-length id is given a
  unique one when Clean Session is 1 ([MQTT-3.1.3-6]) and refused with
  0x02 when it is 0 ([MQTT-3.1.3-8]) or when the policy forbids empty ids;
* MQTT 5 (level 5): a zero-length id is assigned one whatever Clean Start
  says ([MQTT-3.1.3-6]), the session returns it in the CONNACK's Assigned
  Client Identifier.

Row 4: a valid topic name, a QoS the broker grants, and RETAIN only if
retained messages are available ([MQTT-3.2.2-12], [MQTT-3.2.2-13]). Row 5:
a 3.x client cannot be told a Server Keep Alive, so it is refused, as
Mosquitto does; an MQTT 5 client is told one.

Not here: the transport's *admission* refusals, sent before a CONNECT is
decided at all (``transport/endings.py``): a CONNECT at a protocol level
the decoder does not know gets 0x01 in the 3.1.1 form every version can
read; a broker too loaded to take a connection answers 0x89 Server busy
(3.x: 0x03); an MQTT 5 CONNECT the decoder refuses (malformed, a protocol
error) gets a CONNACK with the error's code (``transport/gate.py``,
``farewell``; 3.x: closed). What an accepted CONNECT is granted is negotiated by
``SessionCore.attach`` (``session/core.py``, ``session/negotiation.py``):
Session Present, and at MQTT 5 the Session Expiry Interval, Server Keep
Alive, Receive Maximum, Maximum QoS, Retain / Wildcard / Subscription
Identifier / Shared Subscription Available, Maximum Packet Size, Topic Alias
Maximum, Assigned Client Identifier, Response Information and the
Authentication Method and Data.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Container
from dataclasses import dataclass

from actorbroker.codec import (
    NO_PROPERTIES,
    ConnAck,
    Connect,
    ConnectReturnCode,
    Properties,
    ReasonCode,
)
from actorbroker.routing import TopicError, validate_topic_name

__all__ = [
    "Accepted",
    "ConnectDecision",
    "ConnectPolicy",
    "Refused",
    "auth_method_served",
    "check_connect",
    "decide",
    "keepalive_limit",
    "moved",
    "new_client_id",
    "refuse",
]

_RC = ConnectReturnCode
#: The MQTT 5 reason code that says what each 3.x return code says.
_V5_REASON = {
    _RC.UNACCEPTABLE_PROTOCOL_VERSION: ReasonCode.UNSUPPORTED_PROTOCOL_VERSION,
    _RC.IDENTIFIER_REJECTED: ReasonCode.CLIENT_IDENTIFIER_NOT_VALID,
    _RC.SERVER_UNAVAILABLE: ReasonCode.SERVER_UNAVAILABLE,
    _RC.BAD_USER_NAME_OR_PASSWORD: ReasonCode.BAD_USER_NAME_OR_PASSWORD,
    _RC.NOT_AUTHORIZED: ReasonCode.NOT_AUTHORIZED,
}
#: How much of a refusal's log line an MQTT 5 CONNACK carries as its Reason String.
REASON_STRING_MAX = 200


@dataclass(frozen=True, slots=True)
class ConnectPolicy:
    """What the broker accepts in a CONNECT (rows 1 to 5 of the module doc).

    ``allow_empty_client_id`` is Mosquitto's ``allow_zero_length_clientid``;
    ``assigned_id_prefix`` starts every id the broker makes up;
    ``server_moved`` refuses every CONNECT, pointing MQTT 5 clients at
    ``server_reference``.
    """

    protocol_levels: frozenset[int] = frozenset({3, 4})
    max_client_id_length: int = 65535
    v31_max_client_id_length: int = 23
    allow_empty_client_id: bool = True
    assigned_id_prefix: str = "auto-"
    max_qos: int = 2
    retain_available: bool = True
    max_keepalive: int = 65535
    server_moved: bool = False
    server_reference: str = ""

    def __post_init__(self) -> None:
        if not 1 <= self.max_client_id_length <= 65535:
            raise ValueError("max_client_id_length must be in 1..65535")
        if not 1 <= self.v31_max_client_id_length <= 65535:
            raise ValueError("v31_max_client_id_length must be in 1..65535")
        if self.max_qos not in (0, 1, 2):
            raise ValueError(f"max_qos must be 0, 1 or 2, not {self.max_qos!r}")
        if not 0 <= self.max_keepalive <= 65535:
            raise ValueError("max_keepalive must be in 0..65535")


@dataclass(frozen=True, slots=True)
class Accepted:
    """Accept the connection as ``client_id`` (``assigned``: the broker made it up).

    ``connect`` is the CONNECT as the rest of the login sees it (a client
    certificate's user name in place of the one sent).
    """

    client_id: str
    assigned: bool
    connect: Connect


@dataclass(frozen=True, slots=True)
class Refused:
    """Refuse the connection: send ``connack`` if not None, then close.

    ``return_code`` is the 3.x return code the refusal means (None when the
    CONNECT broke a rule that has none, and no CONNACK is sent at 3.x);
    ``reason`` is a log line with the spec rule id; ``delay`` the seconds the
    CONNACK waits (a failed login's, so that guessing passwords is slow).
    """

    return_code: ConnectReturnCode | None
    reason: str
    connack: ConnAck | None
    delay: float = 0.0


ConnectDecision = Accepted | Refused


def new_client_id(prefix: str = "auto-") -> str:
    """A client id unique with overwhelming probability (128 random bits)."""
    return prefix + uuid.uuid4().hex


def refuse(connect: Connect, code: ConnectReturnCode | None, reason: str, *,
           v5: int | None = None, properties: Properties = NO_PROPERTIES,
           delay: float = 0.0) -> Refused:
    """The refusal of ``connect``: every refusing CONNACK is built here.

    3.x: return ``code``; None means 3.x has no code for the rule, and the
    connection is closed without CONNACK. MQTT 5: reason code ``v5``
    (default: the one that says what ``code`` says) with ``properties``, and
    ``reason`` as the Reason String unless the CONNECT asked for no problem
    information ([MQTT-3.1.2-29]).
    """
    if connect.protocol_level != 5:
        connack = None if code is None else ConnAck(False, code)
        return Refused(code, reason, connack, delay)
    if v5 is not None:
        wire: int = v5
    elif code is not None:
        wire = _V5_REASON[code]
    else:
        raise ValueError("an MQTT 5 refusal needs a reason code")
    if connect.properties.request_problem_information != 0:
        properties = dataclasses.replace(properties,
                                         reason_string=reason[:REASON_STRING_MAX])
    return Refused(code, reason, ConnAck(False, wire, properties), delay)


# -- the rules, each pure: the refusal, or None (or the Accepted of row 3) ----------------

def moved(connect: Connect, policy: ConnectPolicy) -> Refused | None:
    """Row 1: a node that moved for good refuses everyone (v5 0x9D with the reference)."""
    if not policy.server_moved:
        return None
    reference = policy.server_reference
    return refuse(connect, _RC.SERVER_UNAVAILABLE,
                  f"server moved to {reference!r} (configuration)", v5=ReasonCode.SERVER_MOVED,
                  properties=Properties(server_reference=reference))


def _protocol_level(connect: Connect, policy: ConnectPolicy) -> Refused | None:
    """Row 2."""
    if connect.protocol_level in policy.protocol_levels:
        return None
    return refuse(connect, _RC.UNACCEPTABLE_PROTOCOL_VERSION,
                  f"[MQTT-3.1.2-2] protocol level {connect.protocol_level} not served"
                  f" (served: {sorted(policy.protocol_levels)})")


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _client_id(connect: Connect, policy: ConnectPolicy,
               make_id: Callable[[], str]) -> Accepted | Refused:
    """Row 3 (see the module doc)."""
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


def _will(connect: Connect, policy: ConnectPolicy) -> Refused | None:
    """Row 4: 3.x has no return code for these (closed without CONNACK)."""
    will = connect.will
    if will is None:
        return None
    try:
        validate_topic_name(will.topic)
    except TopicError as exc:
        return refuse(connect, None, f"[MQTT-3.1.4-1] invalid Will Topic: {exc}",
                      v5=ReasonCode.TOPIC_NAME_INVALID)
    if will.qos > policy.max_qos:
        return refuse(connect, None,
                      f"[MQTT-3.2.2-12] Will QoS {will.qos} above the maximum {policy.max_qos}",
                      v5=ReasonCode.QOS_NOT_SUPPORTED)
    if will.retain and not policy.retain_available:
        return refuse(connect, None, "[MQTT-3.2.2-13] Will Retain set but retained messages"
                                     " are not available", v5=ReasonCode.RETAIN_NOT_SUPPORTED)
    return None


def keepalive_limit(connect: Connect, policy: ConnectPolicy) -> Refused | None:
    """Row 5: a 3.x client cannot be told a Server Keep Alive, so a longer keepalive than
    the broker allows is refused (0x02, as Mosquitto); MQTT 5 negotiates it in attach."""
    if connect.protocol_level == 5 or connect.keepalive <= policy.max_keepalive:
        return None
    return refuse(connect, _RC.IDENTIFIER_REJECTED,
                  f"keepalive {connect.keepalive}s above max_keepalive {policy.max_keepalive}s")


def auth_method_served(connect: Connect, served: Container[str]) -> Refused | None:
    """Row 12: an MQTT 5 CONNECT naming an Authentication Method the node does not serve
    (0x8C); checked after the login."""
    method = connect.properties.authentication_method if connect.protocol_level == 5 else None
    if method is None or method in served:
        return None
    return refuse(connect, None, f"authentication method {method!r} not served",
                  v5=ReasonCode.BAD_AUTHENTICATION_METHOD)


def check_connect(
    connect: Connect,
    policy: ConnectPolicy = ConnectPolicy(),
    *,
    make_client_id: Callable[[], str] | None = None,
) -> ConnectDecision:
    """Rows 2 to 4: :class:`Accepted` or the first :class:`Refused` (see the module doc).

    ``make_client_id`` returns a fresh id for an empty one (default:
    :func:`new_client_id` with the policy's prefix).
    """
    refused = _protocol_level(connect, policy)
    if refused is not None:
        return refused
    make_id = make_client_id or (lambda: new_client_id(policy.assigned_id_prefix))
    decision = _client_id(connect, policy, make_id)
    if isinstance(decision, Refused):
        return decision
    return _will(connect, policy) or decision


def decide(
    connect: Connect,
    policy: ConnectPolicy,
    *,
    identity: str | None = None,
    make_client_id: Callable[[], str] | None = None,
) -> ConnectDecision:
    """Rows 1 to 5, the ones that need no state: :class:`Accepted` or the first
    :class:`Refused`.

    ``identity``: the user name of a client certificate the TLS listener
    verified; it replaces the CONNECT's user name and password (Mosquitto's
    use_identity_as_username), in the Accepted's ``connect``.
    """
    refused = moved(connect, policy)
    if refused is not None:
        return refused
    if identity is not None:
        connect = dataclasses.replace(connect, username=identity, password=None)
    decision = check_connect(connect, policy, make_client_id=make_client_id)
    if isinstance(decision, Refused):
        return decision
    return keepalive_limit(connect, policy) or decision
