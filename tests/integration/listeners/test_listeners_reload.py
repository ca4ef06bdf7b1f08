"""Certificates reload without dropping connections: on request (the SIGHUP hook) and on change.

The broker's certfile and keyfile are swapped for those of another CA while
a client stays connected: that client keeps working, new handshakes get the
new certificate. A reload from broken files keeps the previous ones.
"""

from __future__ import annotations

import logging
import os
import shutil
import ssl
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt_testkit import Client, RawClient, broker_config
from pki import Authority, Issued, authority

from actorbroker.app import RunningBroker
from actorbroker.config import ListenerConfig

Broker = Callable[..., RunningBroker]


def install(issued: Issued, cert: Path, key: Path) -> None:
    """Put ``issued`` in place the way a renewal does: new files renamed over the old."""
    for source, target in ((issued.key, key), (issued.cert, cert)):
        shutil.copyfile(source, f"{target}.new")
        os.replace(f"{target}.new", target)


def handshake(port: int, ca: str) -> bool:
    """Whether a client trusting only ``ca`` completes a handshake and gets a CONNACK."""
    raw = RawClient("127.0.0.1", port)
    try:
        raw.sock = ssl.create_default_context(cafile=ca).wrap_socket(
            raw.sock, server_hostname="localhost")
        return raw.connect(f"probe-{time.monotonic_ns()}").reason_code == 0
    except ssl.SSLCertVerificationError:
        return False
    finally:
        raw.close()


def test_reload_keeps_live_connections_and_serves_the_new_certificate(
        start_broker: Broker, pki: Authority, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    other = authority(tmp_path / "other-ca", "Other CA")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    install(pki.server, cert, key)
    listener = ListenerConfig(type="tls", bind="127.0.0.1", port=0, certfile=str(cert),
                              keyfile=str(key))
    broker = start_broker(broker_config(tmp_path, listeners=(listener,)))
    port = broker.port
    old = Client("127.0.0.1", port, "before-reload")
    old.paho.tls_set(ca_certs=pki.ca)
    try:
        assert old.connect().rc == 0
        old.subscribe("reload/t", 1)

        install(other.server, cert, key)
        assert broker.call(broker.broker.reload_certificates) is True
        assert handshake(port, other.ca) and not handshake(port, pki.ca)
        new = Client("127.0.0.1", port, "after-reload")
        new.paho.tls_set(ca_certs=other.ca)
        assert new.connect().rc == 0
        new.publish("reload/t", b"to the old connection", 1)
        assert old.expect().payload == b"to the old connection"  # its TLS session lives on
        new.close()

        # Broken files: the reload says why and keeps what it had.
        with caplog.at_level(logging.ERROR, "actorbroker.transport"):
            cert.write_text("not a certificate\n")
            assert broker.call(broker.broker.reload_certificates) is False
        failures = [r.getMessage() for r in caplog.records if "TLS reload failed" in r.getMessage()]
        assert len(failures) == 1, failures
        assert failures[0].startswith(f"listener tls 127.0.0.1:{port}: TLS reload failed, keeping "
                                      "the previous certificates: "), failures
        assert handshake(port, other.ca)

        # On change, without being asked: the listener's poll (every few seconds) finds it.
        install(pki.server, cert, key)
        deadline = time.monotonic() + 20
        while not handshake(port, pki.ca):
            assert time.monotonic() < deadline, "the changed certificate was never picked up"
            time.sleep(0.2)
        assert not handshake(port, other.ca)
        old.publish("reload/t", b"still here", 1)
        assert old.expect().payload == b"still here"
    finally:
        old.close()
