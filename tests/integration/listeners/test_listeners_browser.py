"""MQTT.js in Debian's headless Chromium over ws and wss: connect, subscribe, publish, round trip.

The page (browser/roundtrip.html, with MQTT.js 5.16.0's browser bundle,
MIT, vendored next to it) connects to the broker's ws or wss listener,
subscribes to a topic, publishes to it and, once its own message came
back, publishes the payload to ``browser/result/ID``, where a paho client
on the tcp listener waits for it. For wss the browser trusts the test
server's certificate by its public key
(``--ignore-certificate-errors-spki-list``), and no other.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from listeners_kit import port_of
from mqtt_testkit import Client
from pki import Authority

from actorbroker.app import RunningBroker

Broker = Callable[..., RunningBroker]
PAGE = Path(__file__).parent / "browser" / "roundtrip.html"
CHROMIUM = shutil.which("chromium")  # Debian's; `make sysdeps` installs it


def spki_hash(cert: str) -> str:
    """base64 SHA-256 of the certificate's public key, as Chromium's SPKI list wants it."""
    public = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-pubkey"],
                            capture_output=True, check=True, timeout=20).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public,
                         capture_output=True, check=True, timeout=20).stdout
    digest = subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der,
                            capture_output=True, check=True, timeout=20).stdout
    return base64.b64encode(digest).decode()


@contextmanager
def chromium(url: str, profile: Path, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    """Headless Chromium on ``url`` until the block ends."""
    assert CHROMIUM is not None, "Debian's chromium is missing: run make sysdeps"
    browser = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--disable-dev-shm-usage", *flags, url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield browser
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(10)


@pytest.mark.parametrize("kind", ["ws", "wss"])
def test_mqtt_js_in_chromium(secure_broker: Broker, pki: Authority, tmp_path: Path,
                             kind: str) -> None:
    broker = secure_broker("tcp", kind)
    watcher = Client("127.0.0.1", port_of(broker, "tcp"), f"watch-{kind}")
    try:
        assert watcher.connect().rc == 0
        watcher.subscribe(f"browser/result/js-{kind}", 1)
        url = (f"{PAGE.as_uri()}?url={kind}://localhost:{port_of(broker, kind)}/mqtt"
               f"&id=js-{kind}")
        flags = [f"--ignore-certificate-errors-spki-list={spki_hash(pki.server.cert)}"] \
            if kind == "wss" else []
        with chromium(url, tmp_path / "profile", *flags):
            message = watcher.expect(timeout=45)
        assert (message.topic, message.payload) == (f"browser/result/js-{kind}",
                                                    b"round trip: hello from MQTT.js")
    finally:
        watcher.close()
