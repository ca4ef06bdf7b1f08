"""The cause a SessionDisconnected journals, from the reason code of whoever closed it."""

from __future__ import annotations

import pytest

from actorbroker.codec import ReasonCode as R
from actorbroker.durable.journal import disconnect_cause
from actorbroker.persistence.records import DisconnectCause as C

#: Every reason code of MQTT 5 (one name per value), and the cause it must journal.
EXPECTED: dict[int, C] = {
    R.NORMAL_DISCONNECTION: C.CLIENT_DISCONNECT,
    R.GRANTED_QOS_1: C.UNKNOWN,
    R.GRANTED_QOS_2: C.UNKNOWN,
    R.DISCONNECT_WITH_WILL_MESSAGE: C.CLIENT_DISCONNECT,
    R.NO_MATCHING_SUBSCRIBERS: C.UNKNOWN,
    R.NO_SUBSCRIPTION_EXISTED: C.UNKNOWN,
    R.CONTINUE_AUTHENTICATION: C.UNKNOWN,
    R.RE_AUTHENTICATE: C.UNKNOWN,
    R.UNSPECIFIED_ERROR: C.UNKNOWN,
    R.MALFORMED_PACKET: C.PROTOCOL_ERROR,
    R.PROTOCOL_ERROR: C.PROTOCOL_ERROR,
    R.IMPLEMENTATION_SPECIFIC_ERROR: C.UNKNOWN,
    R.UNSUPPORTED_PROTOCOL_VERSION: C.PROTOCOL_ERROR,
    R.CLIENT_IDENTIFIER_NOT_VALID: C.PROTOCOL_ERROR,
    R.BAD_USER_NAME_OR_PASSWORD: C.NOT_AUTHORIZED,
    R.NOT_AUTHORIZED: C.NOT_AUTHORIZED,
    R.SERVER_UNAVAILABLE: C.UNKNOWN,
    R.SERVER_BUSY: C.UNKNOWN,
    R.BANNED: C.NOT_AUTHORIZED,
    R.SERVER_SHUTTING_DOWN: C.SERVER_SHUTDOWN,
    R.BAD_AUTHENTICATION_METHOD: C.NOT_AUTHORIZED,
    R.KEEP_ALIVE_TIMEOUT: C.KEEPALIVE_TIMEOUT,
    R.SESSION_TAKEN_OVER: C.TAKEN_OVER,
    R.TOPIC_FILTER_INVALID: C.PROTOCOL_ERROR,
    R.TOPIC_NAME_INVALID: C.PROTOCOL_ERROR,
    R.PACKET_IDENTIFIER_IN_USE: C.PROTOCOL_ERROR,
    R.PACKET_IDENTIFIER_NOT_FOUND: C.PROTOCOL_ERROR,
    R.RECEIVE_MAXIMUM_EXCEEDED: C.PROTOCOL_ERROR,
    R.TOPIC_ALIAS_INVALID: C.PROTOCOL_ERROR,
    R.PACKET_TOO_LARGE: C.PROTOCOL_ERROR,
    R.MESSAGE_RATE_TOO_HIGH: C.PROTOCOL_ERROR,
    R.QUOTA_EXCEEDED: C.PROTOCOL_ERROR,
    R.ADMINISTRATIVE_ACTION: C.ADMINISTRATIVE,
    R.PAYLOAD_FORMAT_INVALID: C.PROTOCOL_ERROR,
    R.RETAIN_NOT_SUPPORTED: C.PROTOCOL_ERROR,
    R.QOS_NOT_SUPPORTED: C.PROTOCOL_ERROR,
    R.USE_ANOTHER_SERVER: C.SERVER_SHUTDOWN,
    R.SERVER_MOVED: C.SERVER_SHUTDOWN,
    R.SHARED_SUBSCRIPTIONS_NOT_SUPPORTED: C.PROTOCOL_ERROR,
    R.CONNECTION_RATE_EXCEEDED: C.UNKNOWN,
    R.MAXIMUM_CONNECT_TIME: C.UNKNOWN,
    R.SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED: C.PROTOCOL_ERROR,
    R.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED: C.PROTOCOL_ERROR,
}


def test_the_table_names_every_reason_code() -> None:
    assert set(EXPECTED) == {int(code) for code in R}


@pytest.mark.parametrize("code", sorted(EXPECTED), ids=lambda code: R(code).name)
def test_each_reason_code_journals_its_cause(code: int) -> None:
    assert disconnect_cause(code) is EXPECTED[code]
    assert disconnect_cause(R(code)) is EXPECTED[code]  # the enum as the cores pass it


def test_no_code_is_a_socket_that_went() -> None:
    assert disconnect_cause(None) is C.CONNECTION_LOST


@pytest.mark.parametrize(("code", "cause"), [
    (0x03, C.UNKNOWN), (0x7F, C.UNKNOWN),  # no reason code: not a close's
    (0xA3, C.PROTOCOL_ERROR), (0xFF, C.PROTOCOL_ERROR),  # an error code MQTT 5 has not named
])
def test_codes_mqtt_does_not_name(code: int, cause: C) -> None:
    assert disconnect_cause(code) is cause


def test_every_cause_is_produced() -> None:
    """Each cause the commit log can hold comes out of some close (ADMINISTRATIVE was never
    produced while the cause was searched for in the close's log text)."""
    produced = {disconnect_cause(code) for code in [None, *EXPECTED]}
    assert produced == set(C)
