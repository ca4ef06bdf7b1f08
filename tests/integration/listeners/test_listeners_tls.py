"""tls listeners with real clients: paho, mosquitto_pub/sub, openssl s_client, Python's ssl.

Certificates come from a CA made in the test (``pki`` fixture, openssl CLI);
the broker runs in-process with a tcp and a tls listener on port 0.
"""

from __future__ import annotations

import logging
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from listeners_kit import port_of
from mqtt_testkit import Client, RawClient, broker_config, mosquitto_pub, mosquitto_sub
from pki import Authority, Issued, Pki

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, Connect
from actorbroker.config import ListenerConfig
from actorbroker.startup import BrokerStartError

Broker = Callable[..., RunningBroker]


def paho_tls(port: int, pki: Authority, issued: Issued | None, client_id: str,
             **options: object) -> Client:
    """A paho client over TLS trusting ``pki``'s CA, with ``issued`` as its certificate."""
    made = Client("127.0.0.1", port, client_id, **options)  # type: ignore[arg-type]
    made.paho.tls_set(ca_certs=pki.ca, certfile=issued.cert if issued else None,
                      keyfile=issued.key if issued else None)
    return made


def raw_tls(port: int, pki: Authority, issued: Issued | None, *,
            version: ssl.TLSVersion | None = None) -> RawClient:
    """The codec's raw client over a TLS socket (handshake done, nothing sent)."""
    raw = RawClient("127.0.0.1", port)
    context = ssl.create_default_context(cafile=pki.ca)
    if issued is not None:
        context.load_cert_chain(issued.cert, issued.key)
    if version is not None:
        context.maximum_version = version
    try:
        raw.sock = context.wrap_socket(raw.sock, server_hostname="localhost")
    except BaseException:
        raw.close()
        raise
    return raw


def refused(port: int, pki: Authority, issued: Issued | None, *,
            version: ssl.TLSVersion | None = None) -> bool:
    """True if the broker ends the TLS connection instead of answering a CONNECT.

    With TLS 1.3 the client finishes its handshake before the server has
    checked the client's certificate: the refusal comes on the first read.
    """
    try:
        raw = raw_tls(port, pki, issued, version=version)
    except (ssl.SSLError, ConnectionError):
        return True
    try:
        raw.send(Connect("MQTT", 4, "refused?", True, 30))
        return not isinstance(raw.recv(), ConnAck)
    except (ssl.SSLError, EOFError, ConnectionError):
        return True
    finally:
        raw.close()


def test_paho_with_server_and_client_certificates(secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tls", require_certificate=True)
    port = port_of(broker, "tls")
    sub = paho_tls(port, pki, pki.alice, "tls-sub")
    pub = paho_tls(port, pki, pki.bob, "tls-pub")
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        assert sub.subscribe("tls/#", 2) == [2]
        for qos in (0, 1, 2):
            pub.publish(f"tls/{qos}", b"x" * 70_000, qos)  # several TLS records per packet
            message = sub.expect()
            assert (message.topic, message.payload, message.qos) == (f"tls/{qos}", b"x" * 70_000,
                                                                     qos)
        sock = pub.paho.socket()
        assert isinstance(sock, ssl.SSLSocket) and sock.version() == "TLSv1.3"
    finally:
        sub.close()
        pub.close()


def test_mosquitto_clients_with_certificates(secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tls", require_certificate=True)
    port = str(port_of(broker, "tls"))
    creds = ["--cafile", pki.ca]
    sub = mosquitto_sub("localhost", port, *creds, "--cert", pki.alice.cert, "--key",
                        pki.alice.key, "-t", "mt/+", "-q", "1", "-C", "2", "-v", "-W", "10")
    broker.wait_until(lambda m: m["subscriptions"] == 1)
    for payload in ("one", "two"):
        result = mosquitto_pub("localhost", port, *creds, "--cert", pki.bob.cert, "--key",
                               pki.bob.key, "-t", "mt/t", "-m", payload, "-q", "1")
        assert result.returncode == 0, result.stderr
    out, err = sub.communicate(timeout=15)
    assert (sub.returncode, out) == (0, "mt/t one\nmt/t two\n"), err
    # Without a client certificate the handshake is refused.
    result = mosquitto_pub("localhost", port, *creds, "-t", "mt/t", "-m", "no", "-q", "1")
    assert result.returncode != 0


def s_client(port: int, *args: str) -> str:
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                           "-servername", "localhost", "-verify_return_error", *args],
                          input="", capture_output=True, text=True, timeout=20, check=False)
    return done.stdout + done.stderr


def test_openssl_s_client_verifies_the_server(secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tls")
    port = port_of(broker, "tls")
    out = s_client(port, "-CAfile", pki.ca, "-verify_hostname", "localhost")
    assert "Verify return code: 0 (ok)" in out, out
    assert "subject=CN = localhost" in out and "issuer=CN = Test CA" in out, out
    assert "TLSv1.3" in out, out
    out = s_client(port, "-CAfile", pki.ca, "-tls1_2")  # the default floor lets 1.2 in
    assert "Verify return code: 0 (ok)" in out and "TLSv1.2" in out, out


def test_tls_version_13_refuses_a_12_client(secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tls", tls_version="tlsv1.3")
    port = port_of(broker, "tls")
    out = s_client(port, "-CAfile", pki.ca, "-tls1_2")
    assert "Cipher is (NONE)" in out and "Protocol  : TLSv1.2" in out, out  # no session
    assert not refused(port, pki, None)  # a 1.3 client still gets in


def test_require_certificate_refuses_a_client_without_one(
        secure_broker: Broker, pki: Authority, caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("tls", require_certificate=True)
    port = port_of(broker, "tls")
    with caplog.at_level(logging.INFO, "actorbroker.transport"):
        assert refused(port, pki, None)
        assert refused(port, pki, None, version=ssl.TLSVersion.TLSv1_2)
        broker.wait_until(lambda m: True)  # a round trip on the loop: its log lines are out
    failures = [r.getMessage() for r in caplog.records if "TLS handshake with" in r.getMessage()]
    assert len(failures) == 2 and all("PEER_DID_NOT_RETURN_A_CERTIFICATE" in f
                                      for f in failures), failures
    # A certificate from another CA is refused too; the CA's own are let in.
    mallory = Pki(pki.pki.dir / "other", "Other CA").issue("mallory")
    assert refused(port, pki, mallory)
    assert not refused(port, pki, pki.alice)


def test_a_revoked_certificate_is_refused(secure_broker: Broker, pki: Authority) -> None:
    carol = pki.pki.issue("carol")
    pki.pki.revoke(carol)
    broker = secure_broker("tls", require_certificate=True, crlfile=pki.pki.crl())
    port = port_of(broker, "tls")
    assert refused(port, pki, carol)
    assert not refused(port, pki, pki.alice)


def test_use_identity_as_username(secure_broker: Broker, pki: Authority,
                                  caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("tcp", "tls", require_certificate=True, use_identity_as_username=True,
                           allow_anonymous=False)
    plain = RawClient("127.0.0.1", port_of(broker, "tcp"))
    plain.send(Connect("MQTT", 4, "anon", True, 30, username="alice", password=b"guess"))
    assert plain.recv() == ConnAck(False, 5)  # no password file: nobody gets in by password
    plain.close()
    port = port_of(broker, "tls")
    device = pki.pki.issue("device", cn="", san="DNS:device-7")
    nameless = pki.pki.issue("nameless", cn="")
    with caplog.at_level(logging.INFO):
        for issued, client_id in ((pki.alice, "cert-a"), (device, "cert-d")):
            raw = raw_tls(port, pki, issued)
            # The certificate authenticates: the CONNECT's user name and password are ignored.
            raw.send(Connect("MQTT", 4, client_id, True, 30, username="mallory",
                             password=b"wrong"))
            assert raw.recv() == ConnAck(False, 0)
            raw.disconnect()
        assert refused(port, pki, nameless)
        broker.wait_until(lambda m: True)
    lines = [r.getMessage() for r in caplog.records]
    assert any("client 'cert-a' connected" in line and "user 'alice'" in line for line in lines)
    assert any("client 'cert-d' connected" in line and "user 'device-7'" in line
               for line in lines)
    assert not any("mallory" in line for line in lines)
    assert any("the client certificate names no user" in line for line in lines)


def test_paho_connects_to_tls_by_name_and_the_plain_port_still_works(
        secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tcp", "tls")
    tls = paho_tls(port_of(broker, "tls"), pki, None, "by-name")
    tls.host = "localhost"
    plain = Client("127.0.0.1", port_of(broker, "tcp"), "plain")
    try:
        assert tls.connect().rc == 0 and plain.connect().rc == 0
        plain.subscribe("mix/t", 0)
        tls.publish("mix/t", b"over tls")
        assert plain.expect().payload == b"over tls"
    finally:
        tls.close()
        plain.close()


def test_a_broker_with_unusable_tls_files_does_not_start(tmp_path: Path, pki: Authority,
                                                         start_broker: Broker) -> None:
    listener = ListenerConfig(type="tls", bind="127.0.0.1", port=0, certfile=pki.server.cert,
                              keyfile=pki.alice.key)  # not the certificate's key
    with pytest.raises(BrokerStartError, match="cannot load the TLS files of listener tls "
                                               "127.0.0.1:0: .*KEY_VALUES_MISMATCH"):
        start_broker(broker_config(tmp_path, listeners=(listener,)))
    missing = ListenerConfig(type="tls", bind="127.0.0.1", port=0, certfile="/nonexistent.pem",
                             keyfile=pki.server.key)
    with pytest.raises(BrokerStartError, match="/nonexistent.pem"):
        start_broker(broker_config(tmp_path, listeners=(missing,)))


def test_the_default_ciphers_include_chacha20(secure_broker: Broker, pki: Authority) -> None:
    out = s_client(port_of(secure_broker("tls"), "tls"), "-CAfile", pki.ca, "-tls1_2", "-cipher",
                   "ECDHE-ECDSA-CHACHA20-POLY1305")
    assert "Cipher is ECDHE-ECDSA-CHACHA20-POLY1305" in out, out


def test_ciphers_limit_the_tls12_suites(secure_broker: Broker, pki: Authority) -> None:
    broker = secure_broker("tls", ciphers="ECDHE+AESGCM")
    port = port_of(broker, "tls")
    out = s_client(port, "-CAfile", pki.ca, "-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305")
    assert "Cipher is (NONE)" in out, out  # not offered: no session
    out = s_client(port, "-CAfile", pki.ca, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256")
    assert "Cipher is ECDHE-ECDSA-AES128-GCM-SHA256" in out, out
