"""CONNECT acceptance rules: protocol level, client id, Will, authentication hook."""

from __future__ import annotations

import pytest

from actorbroker.codec import ConnAck, Connect, ConnectReturnCode, ReasonCode, Will
from actorbroker.session import Accepted, ConnectPolicy, Refused, check_connect, new_client_id

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
        assert decision.connack == ConnAck(False, wire)


AUTH_CASES = [
    (RC.ACCEPTED, None),
    (RC.BAD_USER_NAME_OR_PASSWORD, 0x04),
    (RC.NOT_AUTHORIZED, 0x05),
    (RC.SERVER_UNAVAILABLE, 0x03),
]


@pytest.mark.parametrize(("verdict", "wire"), AUTH_CASES)
def test_authentication_hook(verdict: ConnectReturnCode, wire: int | None) -> None:
    seen: list[tuple[str, str | None, bytes | None]] = []

    def authenticate(client_id: str, connect: Connect) -> ConnectReturnCode:
        seen.append((client_id, connect.username, connect.password))
        return verdict

    decision = check_connect(make(V311, "", username="u", password=b"p"),
                             authenticate=authenticate, make_client_id=fixed_id)
    assert seen == [("assigned-1", "u", b"p")]  # the hook sees the final client id
    if wire is None:
        assert isinstance(decision, Accepted)
    else:
        assert isinstance(decision, Refused)
        assert decision.connack == ConnAck(False, wire)
        assert decision.return_code == verdict


def test_hook_not_called_when_an_earlier_rule_refuses() -> None:
    called = []

    def authenticate(client_id: str, connect: Connect) -> ConnectReturnCode:
        called.append(client_id)
        return RC.ACCEPTED

    decision = check_connect(make(V311, "", clean=False), authenticate=authenticate)
    assert isinstance(decision, Refused) and called == []


def test_v5_auth_refusal_maps_to_v5_reason() -> None:
    decision = check_connect(make(V5), ALL_LEVELS, authenticate=lambda cid, c: RC.NOT_AUTHORIZED)
    assert isinstance(decision, Refused)
    assert decision.connack == ConnAck(False, ReasonCode.NOT_AUTHORIZED)


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
