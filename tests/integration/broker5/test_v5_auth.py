"""Enhanced authentication with SCRAM (the full AUTH exchange on a real socket), re-authentication,
user names and passwords against the credentials file, allow_anonymous.

paho-mqtt 2.x cannot send AUTH packets, so the exchange is driven by a RawClient (our codec
on a plain socket) with the SCRAM client of actorbroker.auth, checked against RFC 7677's
test vector in tests/unit/auth.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt5_testkit import Client5, connect5, expect_disconnect
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.auth import Credentials, ScramClient
from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    PingReq,
    PingResp,
    Properties,
    Publish,
    ReasonCode,
)
from actorbroker.config import Config

Raw = Callable[..., RawClient]
Start = Callable[..., RunningBroker]


@pytest.fixture
def secured(tmp_path: Path, start_broker: Start,
            config5: Callable[..., Config]) -> Callable[..., RunningBroker]:
    path = tmp_path / "scram.txt"
    credentials = Credentials()
    credentials.add("alice", "wonderland")
    credentials.save(path)

    def start(**auth: object) -> RunningBroker:
        return start_broker(config5(auth={"scram_credentials_file": str(path), **auth}))
    return start


def scram_connect(raw: RawClient, client_id: str, user: str, password: str,
                  mechanism: str = "SCRAM-SHA-256") -> tuple[ConnAck, ScramClient]:
    """The whole CONNECT exchange; the CONNACK (checked to carry the server's proof if 0)."""
    scram = ScramClient(user, password, mechanism)
    answer = connect5(raw, client_id, authentication_method=mechanism,
                      authentication_data=scram.first())
    assert isinstance(answer, Auth), answer
    assert answer.reason_code == ReasonCode.CONTINUE_AUTHENTICATION
    assert answer.properties.authentication_method == mechanism
    raw.send(Auth(ReasonCode.CONTINUE_AUTHENTICATION, Properties(
        authentication_method=mechanism,
        authentication_data=scram.final(answer.properties.authentication_data or b""))))
    connack = raw.recv()
    assert isinstance(connack, ConnAck)
    if connack.reason_code == 0:
        assert connack.properties.authentication_method == mechanism
        assert scram.verify(connack.properties.authentication_data)  # the server proved itself
    return connack, scram


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_at_connect(secured: Callable[..., RunningBroker], raw5: Raw,
                                   mechanism: str) -> None:
    running = secured()
    r = raw5(running)
    connack, _ = scram_connect(r, "dev", "alice", "wonderland", mechanism)
    assert connack.reason_code == 0
    r.send(PingReq())
    assert r.recv() == PingResp()


def test_a_wrong_password_is_refused_with_0x87(secured: Callable[..., RunningBroker],
                                               raw5: Raw) -> None:
    r = raw5(secured())
    connack, _ = scram_connect(r, "dev", "alice", "looking-glass")
    assert connack.reason_code == ReasonCode.NOT_AUTHORIZED
    r.expect_closed()


def test_an_unknown_method_is_0x8c(secured: Callable[..., RunningBroker], raw5: Raw) -> None:
    r = raw5(secured())
    connack = connect5(r, "dev", authentication_method="KERBEROS")
    assert isinstance(connack, ConnAck)
    assert connack.reason_code == ReasonCode.BAD_AUTHENTICATION_METHOD
    r.expect_closed()


def test_without_credentials_no_method_is_served(raw5: Raw) -> None:
    r = raw5()
    connack = connect5(r, "dev", authentication_method="SCRAM-SHA-256",
                       authentication_data=ScramClient("alice", "x").first())
    assert isinstance(connack, ConnAck)
    assert connack.reason_code == ReasonCode.BAD_AUTHENTICATION_METHOD


def test_only_auth_may_come_before_connack(secured: Callable[..., RunningBroker],
                                           raw5: Raw) -> None:
    r = raw5(secured())
    answer = connect5(r, "dev", authentication_method="SCRAM-SHA-256",
                      authentication_data=ScramClient("alice", "wonderland").first())
    assert isinstance(answer, Auth)
    r.send(Publish("t", b"too early"))
    connack = r.recv()  # [MQTT-3.1.2-30]
    assert isinstance(connack, ConnAck) and connack.reason_code == ReasonCode.PROTOCOL_ERROR


def reauth(r: RawClient, user: str, password: str) -> tuple[Auth | object, ScramClient]:
    scram = ScramClient(user, password)
    method = "SCRAM-SHA-256"
    r.send(Auth(ReasonCode.RE_AUTHENTICATE, Properties(authentication_method=method,
                                                       authentication_data=scram.first())))
    challenge = r.recv()
    assert isinstance(challenge, Auth) and challenge.reason_code == 0x18
    r.send(Auth(ReasonCode.CONTINUE_AUTHENTICATION, Properties(
        authentication_method=method,
        authentication_data=scram.final(challenge.properties.authentication_data or b""))))
    return r.recv(), scram


def test_reauthentication(secured: Callable[..., RunningBroker], raw5: Raw) -> None:
    r = raw5(secured())
    scram_connect(r, "dev", "alice", "wonderland")
    done, scram = reauth(r, "alice", "wonderland")
    assert isinstance(done, Auth) and done.reason_code == ReasonCode.SUCCESS
    assert scram.verify(done.properties.authentication_data)
    r.send(PingReq())
    assert r.recv() == PingResp()  # still connected, same session


def test_failed_reauthentication_disconnects_with_0x87(secured: Callable[..., RunningBroker],
                                                       raw5: Raw) -> None:
    r = raw5(secured())
    scram_connect(r, "dev", "alice", "wonderland")
    scram = ScramClient("alice", "wrong")
    method = Properties(authentication_method="SCRAM-SHA-256",
                        authentication_data=scram.first())
    r.send(Auth(ReasonCode.RE_AUTHENTICATE, method))
    challenge = r.recv()
    assert isinstance(challenge, Auth)
    r.send(Auth(ReasonCode.CONTINUE_AUTHENTICATION, Properties(
        authentication_method="SCRAM-SHA-256",
        authentication_data=scram.final(challenge.properties.authentication_data or b""))))
    assert expect_disconnect(r).reason_code == ReasonCode.NOT_AUTHORIZED  # [MQTT-4.12.1-2]


def test_auth_from_a_client_that_did_not_authenticate_is_a_protocol_error(raw5: Raw) -> None:
    r = raw5()
    connect5(r, "plain")
    r.send(Auth(ReasonCode.RE_AUTHENTICATE,
                Properties(authentication_method="SCRAM-SHA-256")))
    assert expect_disconnect(r).reason_code == ReasonCode.PROTOCOL_ERROR


def test_user_name_and_password_against_the_credentials(
        secured: Callable[..., RunningBroker], raw: Raw) -> None:
    running = secured()
    for password, ok in ((b"wonderland", True), (b"nope", False)):
        c5 = Client5(running.host, running.port, f"u5{ok}")
        c5.paho.username_pw_set("alice", password)
        result = c5.connect()
        c5.close()
        assert result.rc == (0 if ok else ReasonCode.BAD_USER_NAME_OR_PASSWORD)
        c3 = Client(running.host, running.port, f"u3{ok}")
        c3.paho.username_pw_set("alice", password)
        assert (c3.connect().rc == 0) is ok
        c3.close()
        r = raw(target=running)  # the exact MQTT 3.1.1 return code
        r.send(Connect("MQTT", 4, f"r{ok}", True, 60, "alice", password))
        assert r.recv() == ConnAck(False, 0 if ok else 0x04)


def test_without_allow_anonymous_clients_must_authenticate(
        secured: Callable[..., RunningBroker], raw5: Raw, raw: Raw) -> None:
    running = secured(allow_anonymous=False)
    anonymous = raw5(running)
    connack = connect5(anonymous, "anon")
    assert isinstance(connack, ConnAck) and connack.reason_code == ReasonCode.NOT_AUTHORIZED
    v3 = raw(target=running)
    assert v3.connect("anon3") == ConnAck(False, 0x05)
    ok, _ = scram_connect(raw5(running), "dev", "alice", "wonderland")
    assert ok.reason_code == 0
