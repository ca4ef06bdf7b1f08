"""Configuration layer: mosquitto.conf options and their actorbroker equivalents. Imports the stdlib only.

Newcomers often try their mosquitto.conf first. :func:`mosquitto_lines`
recognises one (``name value`` lines with Mosquitto's option names, which TOML
refuses), so that the loader answers with a pointer to the "Coming from
Mosquitto" section of docs/configuration.md and a translation of each line
instead of a TOML syntax error. :data:`MOSQUITTO_OPTIONS` is that section's
table too (render.py), so the hint and the docs never disagree.
"""

from __future__ import annotations

import re

__all__ = ["HINT", "MOSQUITTO_OPTIONS", "mosquitto_lines"]

HINT = "this looks like a mosquitto.conf; see docs/configuration.md, 'Coming from Mosquitto'"

#: Mosquitto option -> what to write in actorbroker.toml, or why there is nothing.
MOSQUITTO_OPTIONS: dict[str, str] = {
    "listener": "`[[listeners]]` with `port` and `bind` (`listener 1883 0.0.0.0` is "
                "`port = 1883`, `bind = \"0.0.0.0\"`)",
    "port": "`port` of `[[listeners]]` (or `--port`, `-p`)",
    "bind_address": "`bind` of `[[listeners]]` (or `--bind`)",
    "max_connections": "`max_connections` of `[[listeners]]`; unlimited is 0, not -1",
    "protocol": "`type` of `[[listeners]]`: `protocol websockets` is `type = \"ws\"` "
                "(`\"wss\"` with a certificate); `mqtt` is `\"tcp\"` (`\"tls\"` with one)",
    "certfile": "`certfile` of a `tls` or `wss` listener (PEM chain, reloaded on change and "
                "SIGHUP); its listener needs `type = \"tls\"` or `\"wss\"`",
    "keyfile": "`keyfile` of a `tls` or `wss` listener (PEM, not encrypted)",
    "cafile": "`cafile` of a `tls` or `wss` listener (`capath` has no equivalent: one file)",
    "require_certificate": "`require_certificate` of a `tls` or `wss` listener",
    "use_identity_as_username": "`use_identity_as_username` of a `tls` or `wss` listener (the "
                                "CN, else the first subjectAltName)",
    "crlfile": "`crlfile` of a `tls` or `wss` listener",
    "tls_version": "`tls_version` of a `tls` or `wss` listener: the oldest accepted, "
                   "`\"tlsv1.2\"` (default) or `\"tlsv1.3\"`",
    "ciphers": "`ciphers` of a `tls` or `wss` listener (TLS 1.2 suites)",
    "http_dir": "none: a ws listener serves MQTT only (`path`, default `/mqtt`)",
    "persistence": "`[storage] durability`: the commit log is on by default (`\"fsync\"`); "
                   "`persistence false` is `durability = \"memory\"`",
    "persistence_location": "`[node] data_dir` (or `--data-dir`)",
    "autosave_interval": "none needed: every QoS 1/2 message is in the commit log before it is "
                         "acknowledged; `[storage] checkpoint_interval` bounds the restart time",
    "log_type": "`[log] level` (`debug`, `info`, `warning` or `error`), `[log] levels` per "
                "logger; `[log] trace` logs one client's every packet",
    "log_dest": "none: the log goes to standard error (redirect it, or let systemd keep it)",
    "allow_anonymous": "`[auth] allow_anonymous`; as in Mosquitto 2 it is false once a password "
                       "file is set, unless set to true (without one it is true here)",
    "password_file": "`[auth] password_file`: the same file, unchanged ($7$, $6$, $argon2id$); "
                     "`actorbroker passwd FILE USER` adds users as `mosquitto_passwd` does",
    "acl_file": "`[auth] acl_file`: the same file, unchanged (subscriptions are decided per "
                "filter: docs/security.md)",
    "use_username_as_clientid": "`[auth] use_username_as_clientid`",
    "clientid_prefixes": "`[auth] client_id_patterns = [\"prefix*\"]` (patterns, and `%u` "
                         "for the user name)",
    "max_inflight_messages": "`[limits] max_inflight_messages`; Mosquitto's 0 is 65535",
    "max_queued_messages": "`[limits] max_queued_messages`",
    "max_queued_bytes": "`[limits] max_queued_bytes`",
    "queue_qos0_messages": "`[limits] queue_qos0_messages`",
    "max_packet_size": "`[limits] max_packet_size`",
    "message_size_limit": "`[limits] max_packet_size` (it counts the whole packet, not the "
                          "payload alone)",
    "max_keepalive": "`[limits] max_keepalive`",
    "memory_limit": "`[limits] max_memory` (refuses new connections while over, instead of"
                    " failing allocations)",
    "max_qos": "`[limits] max_qos`",
    "retain_available": "`[retained] enabled`",
    "sys_interval": "`[sys] interval`",
    "persistent_client_expiration": "`[mqtt5] max_session_expiry_interval` caps what MQTT 5 "
                                    "clients ask for; MQTT 3 persistent sessions are kept "
                                    "until the client cleans them",
    "allow_zero_length_clientid": "none: an empty id is given a unique one when the session "
                                  "is clean, as the protocol says, and refused otherwise",
    "max_topic_alias": "`[mqtt5] topic_alias_maximum`",
    "retry_interval": "`[retry] base` (Mosquitto 1.x)",
    "set_tcp_nodelay": "none needed: always on",
    "connection_messages": "none needed: connections are logged at `info`",
    "per_listener_settings": "none: the limits apply to every listener",
    "connection": "none: there are no bridges (nor `address`, `topic` of a bridge)",
    "include_dir": "none: one file",
    "plugin": "none: no plugins (the same for `auth_plugin`)",
    "user": "none: start the broker as the user it should run as",
    "pid_file": "none: run it under a service manager",
}

#: Options that the table answers under another name.
_SAME_AS = {"auth_plugin": "plugin",
            "address": "connection", "topic": "connection"}

#: ``name value``; a ``name = value`` line is TOML gone wrong, not Mosquitto.
_LINE = re.compile(r"\s*([a-z_]+)(?:\s+([^=\s].*?))?\s*$")


def mosquitto_lines(text: str) -> list[tuple[int, str, str]]:
    """(line, option, equivalent) of each Mosquitto option line; empty if ``text`` is not one.

    Called on text that TOML refused: a single ``name value`` line with a
    Mosquitto option name is enough to tell.
    """
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LINE.fullmatch(line)  # blank and comment lines do not match
        if match is None or match.group(2) is None:
            continue
        name = match.group(1)
        entry = _SAME_AS.get(name, name)
        if entry in MOSQUITTO_OPTIONS:
            found.append((number, name, MOSQUITTO_OPTIONS[entry]))
    return found
