"""Fixtures for the listener tests: a certificate authority (openssl CLI) and brokers with tls/ws/wss listeners.

* ``pki``: one :class:`~pki.Authority` per module: ``ca``, ``server``
  (localhost, 127.0.0.1), ``alice`` and ``bob`` (client certificates, CN =
  their name), and ``pki.pki`` to issue or revoke more.
* ``secure_broker(*kinds, **options)``: a broker (``start_broker``) with one
  listener of each kind given (``"tcp"``, ``"tls"``, ``"ws"``, ``"wss"``)
  on 127.0.0.1 port 0, the TLS ones with the ``server`` certificate;
  listener options go to every listener that reads them
  (``require_certificate=True``, ``path=""``), the others to the broker's
  config (``allow_anonymous=False``, ``connect_timeout=1``).
  ``listeners_kit.port_of(broker, kind)`` is the port of that listener.

The helpers (``pki.py``, ``ws_client.py``, ``listeners_kit.py``) live next to
this file; tests import them by name (not from conftest: the transport tests
have a conftest module of their own).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actorbroker.app import RunningBroker
from actorbroker.config import ListenerConfig

sys.path.insert(0, str(Path(__file__).parent))

from mqtt_testkit import broker_config
from pki import Authority, authority

_TLS_OPTIONS = ("cafile", "require_certificate", "use_identity_as_username", "crlfile",
                "tls_version", "ciphers")
_LISTENER_OPTIONS = (*_TLS_OPTIONS, "path", "max_connections")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return authority(tmp_path_factory.mktemp("pki"))


def listener(kind: str, pki: Authority, **options: Any) -> ListenerConfig:
    """A ``kind`` listener on 127.0.0.1 port 0; TLS ones get the server certificate.

    ``options`` that the kind does not read (``path`` on tcp, say) are left out.
    """
    given = {k: v for k, v in options.items()
             if k == "max_connections" or (k == "path" and kind in ("ws", "wss"))}
    if kind in ("tls", "wss"):
        given.update((k, v) for k, v in options.items() if k in _TLS_OPTIONS)
        if given.get("require_certificate"):
            given.setdefault("cafile", pki.ca)
        given.update(certfile=pki.server.cert, keyfile=pki.server.key)
    return ListenerConfig(type=kind, bind="127.0.0.1", port=0, **given)


@pytest.fixture
def secure_broker(start_broker: Callable[..., RunningBroker], pki: Authority,
                  tmp_path: Path) -> Callable[..., RunningBroker]:
    def start(*kinds: str, **options: Any) -> RunningBroker:
        own = {k: v for k, v in options.items() if k in _LISTENER_OPTIONS}
        rest = {k: v for k, v in options.items() if k not in _LISTENER_OPTIONS}
        listeners = tuple(listener(kind, pki, **own) for kind in kinds)
        return start_broker(broker_config(tmp_path, listeners=listeners, **rest))
    return start
