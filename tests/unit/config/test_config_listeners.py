"""The rules that tie a listener's options to its type and to each other, reported at the option's line."""

from __future__ import annotations

import pytest

from actorbroker.config import InvalidConfigError, ListenerConfig, describe, loads

TLS = 'certfile = "s.pem"\nkeyfile = "s.key"\n'


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('type = "tls"\n' + TLS, []),
        ('type = "wss"\n' + TLS + 'path = ""\n', []),
        ('type = "ws"\npath = "/ws"\n', []),
        ('type = "tls"\n' + TLS + 'cafile = "ca.pem"\nrequire_certificate = true\n'
         'use_identity_as_username = true\ncrlfile = "crl.pem"\ntls_version = "tlsv1.3"\n'
         'ciphers = "ECDHE+AESGCM"\n', []),
        ('type = "tls"\n',
         [(1, ('listeners[0].certfile must be set, and keyfile too: a "tls" listener needs '
              "certfile and keyfile"))]),
        ('type = "wss"\ncertfile = "s.pem"\n',
         [(1, 'listeners[0].keyfile must be set: a "wss" listener needs certfile and keyfile')]),
        ('type = "tcp"\ncafile = "ca.pem"\nrequire_certificate = true\n',
         [(3, 'listeners[0].cafile is for tls and wss listeners; this one is "tcp"'),
          (4, ('listeners[0].require_certificate is for tls and wss listeners; this one is '
              '"tcp"'))]),
        ('type = "ws"\ntls_version = "tlsv1.3"\n',
         [(3, 'listeners[0].tls_version is for tls and wss listeners; this one is "ws"')]),
        ('type = "tls"\n' + TLS + "require_certificate = true\n",
         [(5, ("listeners[0].require_certificate needs cafile (the authorities client "
              "certificates must chain to)"))]),
        ('type = "tls"\n' + TLS + "use_identity_as_username = true\n",
         [(5, "listeners[0].use_identity_as_username needs require_certificate = true")]),
        ('type = "tls"\n' + TLS + 'crlfile = "crl.pem"\n',
         [(5, "listeners[0].crlfile needs require_certificate = true")]),
        ('type = "tls"\n' + TLS + 'path = "/mqtt2"\n',
         [(5, 'listeners[0].path is for ws and wss listeners; this one is "tls"')]),
        ('type = "ws"\npath = "mqtt"\n',
         [(3, ('listeners[0].path must start with "/" and hold no space, "?" or "#", '
              'not "mqtt"'))]),
        ('type = "ws"\npath = "/a?b"\n',
         [(3, ('listeners[0].path must start with "/" and hold no space, "?" or "#", '
              'not "/a?b"'))]),
        ('type = "tls"\n' + TLS + 'tls_version = "tlsv1.1"\n',
         [(5, 'listeners[0].tls_version must be "tlsv1.2" or "tlsv1.3", not "tlsv1.1"')]),
    ],
)
def test_listener_rules(table: str, expected: list[tuple[int, str]]) -> None:
    text = "[[listeners]]\n" + table
    if not expected:
        assert loads(text).listeners[0].type in ("tcp", "tls", "ws", "wss")
        return
    with pytest.raises(InvalidConfigError) as caught:
        loads(text)
    assert [(e.line, e.message) for e in caught.value.errors] == expected


def test_listeners_built_in_code_are_held_to_the_same_rules() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        ListenerConfig(type="tls", certfile="s.pem", keyfile="s.key", crlfile="crl.pem")
    assert [(e.key, e.message) for e in caught.value.errors] == [
        ("listeners.crlfile", "listeners.crlfile needs require_certificate = true")]
    assert ListenerConfig(type="ws", path="").path == ""


def test_serve_summarises_each_listener() -> None:
    config = loads('[[listeners]]\nport = 1883\n'
                   '[[listeners]]\ntype = "tls"\nport = 8883\n' + TLS
                   + 'cafile = "ca.pem"\nrequire_certificate = true\n'
                     'use_identity_as_username = true\ntls_version = "tlsv1.3"\n'
                   '[[listeners]]\ntype = "wss"\nport = 8884\n' + TLS + 'path = ""\n'
                   '[[listeners]]\ntype = "ws"\nport = 8080\n')
    assert [line for line in describe(config) if line.startswith("listener")] == [
        "listener tcp 127.0.0.1:1883, at most 10000 connections",
        ("listener tls 127.0.0.1:8883, at most 10000 connections, TLS 1.3 and later, client "
         "certificates required, their name is the user"),
        "listener wss 127.0.0.1:8884, at most 10000 connections, path any, TLS 1.2 and later",
        "listener ws 127.0.0.1:8080, at most 10000 connections, path /mqtt",
    ]
