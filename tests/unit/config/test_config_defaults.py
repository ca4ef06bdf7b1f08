"""Every option's default, the shape of Config, and the example file."""

from __future__ import annotations

import dataclasses
import re
import socket
from pathlib import Path

import pytest

from actorbroker.config import (
    SECTIONS,
    Config,
    LimitsConfig,
    ListenerConfig,
    load,
    loads,
)
from actorbroker.config.render import DOCS_DIR, EXAMPLE_NAME
from actorbroker.errors import InvalidConfigError

#: (section, option) -> default, written out by hand: a changed default must
#: show up here as a deliberate edit.
EXPECTED_DEFAULTS: dict[tuple[str, str], object] = {
    # The host name, with anything but [A-Za-z0-9_.-] made a dash.
    ("node", "name"): re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname()) or "node",
    # None: `actorbroker serve` uses ./data, a broker embedded in code keeps it all in memory.
    ("node", "data_dir"): None,
    ("log", "level"): "info",
    ("log", "format"): "text",
    ("log", "levels"): {},
    ("log", "trace"): [],
    ("listeners", "type"): "tcp",
    ("listeners", "bind"): "127.0.0.1",
    ("listeners", "port"): 1883,
    ("listeners", "max_connections"): 10_000,
    ("listeners", "max_connections_per_ip"): 0,
    ("listeners", "max_connect_rate_per_ip"): 0.0,
    ("listeners", "certfile"): "",
    ("listeners", "keyfile"): "",
    ("listeners", "cafile"): "",
    ("listeners", "require_certificate"): False,
    ("listeners", "use_identity_as_username"): False,
    ("listeners", "crlfile"): "",
    ("listeners", "tls_version"): "tlsv1.2",
    ("listeners", "ciphers"): "",
    ("listeners", "path"): "/mqtt",
    ("limits", "max_packet_size"): 1024 * 1024,
    ("limits", "max_connect_size"): 64 * 1024,
    ("limits", "max_inflight_messages"): 20,
    ("limits", "max_queued_messages"): 1000,
    ("limits", "max_queued_bytes"): 0,
    ("limits", "queue_qos0_messages"): False,
    ("limits", "backpressure_timeout"): 1.0,
    ("limits", "connect_timeout"): 10.0,
    ("limits", "max_client_id_length"): 256,
    ("limits", "max_memory"): 0,
    ("limits", "max_loop_lag"): 0.0,
    ("limits", "max_keepalive"): 65535,
    ("limits", "max_qos"): 2,
    ("limits", "max_subscriptions"): 100_000,
    ("limits", "max_topic_length"): 65535,
    ("limits", "max_topic_levels"): 128,
    ("limits", "max_publish_rate"): 0.0,
    ("limits", "max_publish_burst"): 0.0,
    ("sys", "interval"): 10.0,
    ("retained", "enabled"): True,
    ("retained", "max_retained_messages"): 0,
    ("storage", "durability"): "fsync",
    ("storage", "group_commit_interval"): 2.0,
    ("storage", "segment_bytes"): 64 * 1024 * 1024,
    ("storage", "retention_hours"): 168.0,
    ("storage", "retention_bytes"): 1024 * 1024 * 1024,
    ("storage", "max_disk_bytes"): 0,
    ("storage", "durable_queue_bytes"): 256 * 1024 * 1024,
    ("storage", "log_qos0"): False,
    ("storage", "checkpoint_bytes"): 8 * 1024 * 1024,
    ("storage", "checkpoint_interval"): 300.0,
    ("storage", "snapshots"): True,
    ("retry", "mqtt3_in_session"): True,
    ("retry", "base"): 20.0,
    ("retry", "factor"): 2.0,
    ("retry", "cap"): 300.0,
    ("retry", "jitter"): 0.2,
    ("retry", "internal_base"): 0.1,
    ("mqtt5", "max_session_expiry_interval"): 0,
    ("mqtt5", "receive_maximum"): 20,
    ("mqtt5", "topic_alias_maximum"): 10,
    ("mqtt5", "outbound_topic_aliases"): 10,
    ("mqtt5", "wildcard_subscriptions"): True,
    ("mqtt5", "subscription_identifiers"): True,
    ("mqtt5", "shared_subscriptions"): True,
    ("mqtt5", "shared_subscription_strategy"): "round_robin",
    ("mqtt5", "response_information_prefix"): "",
    ("mqtt5", "server_reference"): "",
    ("mqtt5", "redirect"): "use_another_server",
    ("auth", "scram_credentials_file"): "",
    ("auth", "password_file"): "",
    ("auth", "acl_file"): "",
    ("auth", "use_username_as_clientid"): False,
    ("auth", "client_id_patterns"): [],
    ("auth", "takeover_users"): [],
    ("auth", "login_failure_delay"): 1.0,
    ("auth", "allow_anonymous"): None,  # computed: see the test below
    ("http", "enabled"): False,
    ("http", "bind"): "127.0.0.1",
    ("http", "port"): 18083,
    ("http", "token_file"): "",
}


def _value(config: Config, section: str, name: str) -> object:
    part = getattr(config, section)
    if section == "listeners":
        assert len(part) == 1
        part = part[0]
    return getattr(part, name)


@pytest.mark.parametrize(("section", "name"), sorted(EXPECTED_DEFAULTS))
def test_default(section: str, name: str) -> None:
    expected = EXPECTED_DEFAULTS[(section, name)]
    for config in (Config(), loads(""), loads("# only a comment\n")):
        value = _value(config, section, name)
        assert value == expected and type(value) is type(expected)


def test_the_expected_table_covers_every_option() -> None:
    declared = {(s.name, name) for s in SECTIONS for name, _ in s.options()}
    assert declared == set(EXPECTED_DEFAULTS)


def test_sections_are_frozen_slotted_dataclasses() -> None:
    for cls in (Config, *(s.cls for s in SECTIONS)):
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert "__slots__" in cls.__dict__
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().limits.max_qos = 1  # type: ignore[misc]


def test_every_option_has_help_and_a_kind_matching_its_annotation() -> None:
    kinds = {"str": str, "int": int, "float": float, "bool": bool, "dict[str, str]": dict,
             "list[str]": list}
    for section in SECTIONS:
        annotations = {f.name: f.type for f in dataclasses.fields(section.cls)}
        for name, spec in section.options():
            assert len(spec.help) > 20, f"{section.name}.{name} needs help text"
            # "| None": a default that means "not given" (data_dir), never a file's value.
            kind = str(annotations[name]).removesuffix(" | None")
            assert kinds[kind] is spec.kind, f"{section.name}.{name}"


def test_no_listeners_array_means_one_tcp_listener_on_localhost_1883() -> None:
    assert loads("[limits]\nmax_qos = 1\n").listeners == (ListenerConfig(),)
    assert Config().listeners == (ListenerConfig("tcp", "127.0.0.1", 1883, 10_000),)


def test_a_file_sets_only_what_it_names() -> None:
    config = loads(
        '[node]\nname = "edge-7"\n'
        "[limits]\nmax_inflight_messages = 1\nconnect_timeout = 3\n"
        "[[listeners]]\nport = 1884\n"
        '[[listeners]]\nbind = "::"\nport = 1885\nmax_connections = 0\n'
        "[retained]\nenabled = false\n"
    )
    assert config.node.name == "edge-7" and config.node.data_dir is None
    assert config.limits == dataclasses.replace(
        LimitsConfig(), max_inflight_messages=1, connect_timeout=3.0
    )
    assert type(config.limits.connect_timeout) is float
    assert config.listeners == (
        ListenerConfig(port=1884),
        ListenerConfig(bind="::", port=1885, max_connections=0),
    )
    assert config.retained.enabled is False and config.sys.interval == 10.0


def test_inline_and_dotted_forms_load_like_tables() -> None:
    expected = dataclasses.replace(Config(), limits=LimitsConfig(max_qos=1, max_keepalive=60))
    assert loads("limits = { max_qos = 1, max_keepalive = 60 }\n") == expected
    assert loads("limits.max_qos = 1\nlimits.max_keepalive = 60\n") == expected
    assert loads("listeners = [{ port = 1884 }]\n").listeners == (ListenerConfig(port=1884),)


def test_the_example_file_loads_and_equals_the_defaults() -> None:
    path = DOCS_DIR / EXAMPLE_NAME
    assert load(path) == Config()
    assert load(Path(str(path))) == loads(path.read_text(), source=str(path))


def test_sections_built_in_code_are_checked_like_a_file() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        LimitsConfig(max_qos=7, max_inflight_messages=0)
    assert [(e.line, e.key, e.message) for e in caught.value.errors] == [
        (None, "limits.max_inflight_messages",
         "limits.max_inflight_messages must be from 1 to 65535, not 0"),
        (None, "limits.max_qos", "limits.max_qos must be 0, 1 or 2, not 7"),
    ]
    with pytest.raises(InvalidConfigError, match='listeners.keyfile must be set: a "wss" listener'):
        ListenerConfig(type="wss", certfile="server.pem")
    timeout = LimitsConfig(connect_timeout=3).connect_timeout
    assert timeout == 3.0 and type(timeout) is float


def test_a_config_without_listeners_is_allowed_in_code_only() -> None:
    bare = Config(listeners=())
    assert bare.listeners == ()
    assert bare.with_overrides(port=0).listeners == (ListenerConfig(port=0),)
    with pytest.raises(InvalidConfigError, match="listeners is empty"):
        loads("listeners = []\n")


def test_allow_anonymous_follows_the_password_file_unless_set() -> None:
    """As Mosquitto 2: anonymous clients are refused once a password file is set."""
    assert Config().auth.allow_anonymous is None and Config().auth.anonymous is True
    assert loads('[auth]\npassword_file = "p"\n').auth.anonymous is False
    assert loads('[auth]\npassword_file = "p"\nallow_anonymous = true\n').auth.anonymous
    assert not loads("[auth]\nallow_anonymous = false\n").auth.anonymous
