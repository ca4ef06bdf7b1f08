"""CONNECT acceptance rules that need no state: the node moved, protocol level, client id,
Will, keepalive; their order; the refusals' CONNACKs at each protocol level."""

from __future__ import annotations

import dataclasses

import pytest

from actorbroker.codec import ConnAck, Connect, ConnectReturnCode, Properties, ReasonCode, Will
from actorbroker.session import (
    Accepted,
    ConnectPolicy,
    Refused,
    auth_method_served,
    check_connect,
    decide,
    moved,
    new_client_id,
    refuse,
)
from actorbroker.session.connect import REASON_STRING_MAX

RC = ConnectReturnCode
V31, V311, V5 = 3, 4, 5


def make(level: int = V311, client_id: str = "c", clean: bool = True, will: Will | None = None,
         username: str | None = None, password: bytes | None = None) -> Connect:
    name = "MQIsdp" if level == 3 else "MQTT"
    return Connect(name, level, client_id, clean, 60, username, password, will)


def fixed_id() -> str:
    return "assigned-1"


ALL_LEVELS = ConnectPolicy(protocol_levels=frozenset({3, 4, 5}))

# (case, connect, policy, expected: client id accepted | (return code, v3/v5 CONNACK code or None, rule))
CASES = [
    ("3.1.1 ordinary id", make(), ConnectPolicy(), "c"),
    ("3.1 23 chars", make(V31, "x" * 23), ConnectPolicy(), "x" * 23),
    ("3.1 24 chars", make(V31, "x" * 24), ConnectPolicy(), (RC.IDENTIFIER_REJECTED, 0x02, "MQTT 3.1")),
    ("3.1 empty", make(V31, ""), ConnectPolicy(), (RC.IDENTIFIER_REJECTED, 0x02, "MQTT 3.1")),
    ("3.1 empty even with clean", make(V31, "", clean=True), ConnectPolicy(),
     (RC.IDENTIFIER_REJECTED, 0x02, "1 to 23")),
    ("3.1.1 long id allowed by default", make(V311, "x" * 1000), ConnectPolicy(), "x" * 1000),
    ("3.1.1 id above configured max", make(V311, "x" * 65), ConnectPolicy(max_client_id_length=64),
     (RC.IDENTIFIER_REJECTED, 0x02, "[MQTT-3.1.3-5]")),
    ("3.1.1 id length counts UTF-8 bytes", make(V311, "é" * 33), ConnectPolicy(max_client_id_length=64),
     (RC.IDENTIFIER_REJECTED, 0x02, "66 bytes")),
    ("3.1.1 empty id, clean 1: assigned", make(V311, "", clean=True), ConnectPolicy(), "assigned-1"),
    ("3.1.1 empty id, clean 0: rejected", make(V311, "", clean=False), ConnectPolicy(),
     (RC.IDENTIFIER_REJECTED, 0x02, "[MQTT-3.1.3-8]")),
    ("3.1.1 empty id not allowed by policy", make(V311, ""), ConnectPolicy(allow_empty_client_id=False),
     (RC.IDENTIFIER_REJECTED, 0x02, "[MQTT-3.1.3-6]")),
    ("3.1 configurable limit", make(V31, "x" * 30), ConnectPolicy(v31_max_client_id_length=30), "x" * 30),
    ("level 5 not served", make(V5), ConnectPolicy(),
     (RC.UNACCEPTABLE_PROTOCOL_VERSION, ReasonCode.UNSUPPORTED_PROTOCOL_VERSION, "[MQTT-3.1.2-2]")),
    ("level 3 not served", make(V31), ConnectPolicy(protocol_levels=frozenset({4})),
     (RC.UNACCEPTABLE_PROTOCOL_VERSION, 0x01, "[MQTT-3.1.2-2]")),
    ("5.0 empty id, clean 0: assigned", make(V5, "", clean=False), ALL_LEVELS, "assigned-1"),
    ("5.0 refusal uses v5 codes", make(V5, "x" * 65), ConnectPolicy(frozenset({5}), max_client_id_length=64),
     (RC.IDENTIFIER_REJECTED, ReasonCode.CLIENT_IDENTIFIER_NOT_VALID, "[MQTT-3.1.3-5]")),
    ("will ok", make(will=Will("w/t", b"x", 2, True)), ConnectPolicy(), "c"),
    ("will qos above max, 3.1.1: no CONNACK", make(will=Will("w", b"", 2)), ConnectPolicy(max_qos=1),
     (None, None, "[MQTT-3.2.2-12]")),
    ("will qos above max, 5.0: 0x9B", make(V5, will=Will("w", b"", 1)),
     ConnectPolicy(frozenset({5}), max_qos=0), (None, ReasonCode.QOS_NOT_SUPPORTED, "[MQTT-3.2.2-12]")),
    ("will retain unavailable, 3.1.1", make(will=Will("w", b"", 0, True)),
     ConnectPolicy(retain_available=False), (None, None, "[MQTT-3.2.2-13]")),
    ("will retain unavailable, 5.0: 0x9A", make(V5, will=Will("w", b"", 0, True)),
     ConnectPolicy(frozenset({5}), retain_available=False),
     (None, ReasonCode.RETAIN_NOT_SUPPORTED, "[MQTT-3.2.2-13]")),
    ("will topic with wildcard", make(will=Will("w/#", b"")), ConnectPolicy(),
     (None, None, "[MQTT-3.1.4-1]")),
    ("will topic empty", make(will=Will("", b"")), ConnectPolicy(), (None, None, "[MQTT-4.7.3-1]")),
]


@pytest.mark.parametrize(("connect", "policy", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_connect_rules(connect: Connect, policy: ConnectPolicy, expected: object) -> None:
    decision = check_connect(connect, policy, make_client_id=fixed_id)
    if isinstance(expected, str):
        assert isinstance(decision, Accepted), decision
        assert decision.client_id == expected
        assert decision.assigned == (connect.client_id == "")
        assert decision.connect is connect
        return
    assert isinstance(expected, tuple)
    return_code, wire, rule = expected
    assert isinstance(decision, Refused), decision
    assert decision.return_code == return_code
    assert rule in decision.reason
    if wire is None:
        assert decision.connack is None
    else:
        assert decision.connack is not None
        assert decision.connack.reason_code == wire and not decision.connack.session_present


def test_default_assigned_ids_are_unique_and_prefixed() -> None:
    first = check_connect(make(V311, ""), ConnectPolicy(assigned_id_prefix="gen-"))
    second = check_connect(make(V311, ""), ConnectPolicy(assigned_id_prefix="gen-"))
    assert isinstance(first, Accepted) and isinstance(second, Accepted)
    assert first.client_id.startswith("gen-") and first.client_id != second.client_id
    assert new_client_id("p").startswith("p") and len(new_client_id()) == len("auto-") + 32


@pytest.mark.parametrize("kwargs", [
    {"max_client_id_length": 0}, {"max_qos": 3}, {"v31_max_client_id_length": 0},
])
def test_policy_rejects_bad_settings(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ConnectPolicy(**kwargs)  # type: ignore[arg-type]


# Every rule of decide() switched on: the node moved, ids up to 23 bytes,
# Will QoS up to 1, keepalive up to 100 s.
STRICT = ConnectPolicy(protocol_levels=frozenset({3, 4, 5}), max_client_id_length=23,
                       max_qos=1, max_keepalive=100, server_moved=True,
                       server_reference="b.example:1883")
BAD_ID, BAD_WILL, SLOW = "x" * 24, Will("w", b"", 2), 200

# (rule, policy, the CONNECT's faults, then per level: 3.x return code or None for a close
# without CONNACK, "ok" for accepted; v5 reason code or "ok"). Each CONNECT breaks its rule
# and every later one, so the first failing rule must be the one that answers.
ORDER = [
    ("moved", STRICT, dict(client_id=BAD_ID, will=BAD_WILL, keepalive=SLOW), 0x03, 0x9D),
    ("protocol level", dataclasses.replace(STRICT, server_moved=False, protocol_levels=frozenset()),
     dict(client_id=BAD_ID, will=BAD_WILL, keepalive=SLOW), 0x01, 0x84),
    ("client id", dataclasses.replace(STRICT, server_moved=False),
     dict(client_id=BAD_ID, will=BAD_WILL, keepalive=SLOW), 0x02, 0x85),
    ("will", dataclasses.replace(STRICT, server_moved=False),
     dict(will=BAD_WILL, keepalive=SLOW), None, 0x9B),
    ("keepalive (v5: negotiated)", dataclasses.replace(STRICT, server_moved=False),
     dict(keepalive=SLOW), 0x02, "ok"),
    ("accepted", dataclasses.replace(STRICT, server_moved=False), {}, "ok", "ok"),
]


@pytest.mark.parametrize("level", [V31, V311, V5])
@pytest.mark.parametrize(("policy", "faults", "v3", "v5"), [r[1:] for r in ORDER],
                         ids=[r[0] for r in ORDER])
def test_decide_order(level: int, policy: ConnectPolicy, faults: dict[str, object],
                      v3: int | str | None, v5: int | str) -> None:
    connect = dataclasses.replace(make(level, "c"), **faults)
    decision = decide(connect, policy, make_client_id=fixed_id)
    expected = v5 if level == V5 else v3
    if expected == "ok":
        assert isinstance(decision, Accepted), decision
        return
    assert isinstance(decision, Refused), decision
    if expected is None:
        assert decision.connack is None and decision.return_code is None
        return
    assert decision.connack is not None and decision.connack.reason_code == expected
    if level == V5:  # the log line goes along as the Reason String
        assert decision.connack.properties.reason_string == decision.reason


def test_moved_points_v5_clients_at_the_reference() -> None:
    refused = moved(make(V5), STRICT)
    assert refused is not None and refused.connack is not None
    assert refused.connack.properties.server_reference == "b.example:1883"
    assert moved(make(V5), ConnectPolicy()) is None
    v3 = moved(make(V311), STRICT)
    assert v3 is not None and v3.connack == ConnAck(False, 0x03)


def test_a_certificate_identity_replaces_user_name_and_password() -> None:
    policy = dataclasses.replace(STRICT, server_moved=False)
    decision = decide(make(V311, "c", username="typed", password=b"pw"), policy,
                      identity="cert-user")
    assert isinstance(decision, Accepted)
    assert (decision.connect.username, decision.connect.password) == ("cert-user", None)
    # The node moved: refused before anything else, the identity changes nothing.
    assert isinstance(decide(make(V311), STRICT, identity="cert-user"), Refused)


def test_a_v5_refusal_explains_itself_unless_told_not_to() -> None:
    long_reason = "r" * 300
    told = refuse(make(V5), RC.NOT_AUTHORIZED, long_reason)
    assert told.connack == ConnAck(False, ReasonCode.NOT_AUTHORIZED,
                                   Properties(reason_string="r" * REASON_STRING_MAX))
    quiet = dataclasses.replace(make(V5), properties=Properties(request_problem_information=0))
    assert refuse(quiet, RC.NOT_AUTHORIZED, long_reason).connack == ConnAck(
        False, ReasonCode.NOT_AUTHORIZED)
    # 3.x never carries properties; the delay and the 3.x meaning are kept at every level.
    v3 = refuse(make(V311), RC.BAD_USER_NAME_OR_PASSWORD, "no", delay=1.5)
    assert (v3.connack, v3.return_code, v3.delay) == (
        ConnAck(False, 0x04), RC.BAD_USER_NAME_OR_PASSWORD, 1.5)


def test_a_rule_3x_has_no_code_for_closes_without_connack() -> None:
    assert refuse(make(V311), None, "no code", v5=ReasonCode.PROTOCOL_ERROR).connack is None
    v5 = refuse(make(V5), None, "no code", v5=ReasonCode.PROTOCOL_ERROR)
    assert v5.connack is not None and v5.connack.reason_code == ReasonCode.PROTOCOL_ERROR
    with pytest.raises(ValueError):
        refuse(make(V5), None, "a v5 refusal needs a code")


@pytest.mark.parametrize(("level", "method", "served", "wire"), [
    (V5, "SCRAM-SHA-256", ("SCRAM-SHA-256",), None),
    (V5, "NOPE", ("SCRAM-SHA-256",), ReasonCode.BAD_AUTHENTICATION_METHOD),
    (V5, "NOPE", (), ReasonCode.BAD_AUTHENTICATION_METHOD),
    (V5, None, (), None),
    (V311, "NOPE", (), None),  # 3.x has no Authentication Method: nothing to check
])
def test_auth_method_served(level: int, method: str | None, served: tuple[str, ...],
                            wire: int | None) -> None:
    connect = dataclasses.replace(make(level),
                                  properties=Properties(authentication_method=method))
    refused = auth_method_served(connect, served)
    if wire is None:
        assert refused is None
    else:
        assert refused is not None and refused.connack is not None
        assert refused.connack.reason_code == wire and "not served" in refused.reason


def test_policy_rejects_a_keepalive_limit_out_of_range() -> None:
    with pytest.raises(ValueError):
        ConnectPolicy(max_keepalive=65536)
