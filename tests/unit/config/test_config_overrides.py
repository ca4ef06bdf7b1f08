"""Config.with_overrides: command line flags applied on top of the file."""

from __future__ import annotations

import pickle

import pytest

from actorbroker.config import Config, ListenerConfig, loads
from actorbroker.errors import BrokerError, ConfigError, InvalidConfigError


def test_no_flag_changes_nothing() -> None:
    config = loads("[limits]\nmax_qos = 1\n[[listeners]]\nport = 1884\n")
    assert config.with_overrides() == config
    assert config.with_overrides(bind=None, port=None, data_dir=None, log_level=None) == config


def test_each_flag_replaces_its_option() -> None:
    base = Config()
    assert base.with_overrides(bind="0.0.0.0").listeners == (ListenerConfig(bind="0.0.0.0"),)
    assert base.with_overrides(port=0).listeners == (ListenerConfig(port=0),)
    assert base.with_overrides(data_dir="/var/lib/ab").node.data_dir == "/var/lib/ab"
    assert base.with_overrides(log_level="debug").log.level == "debug"
    changed = base.with_overrides(bind="::1", port=2883, data_dir="d", log_level="error")
    assert (changed.listeners[0].bind, changed.listeners[0].port) == ("::1", 2883)
    assert (changed.node.data_dir, changed.log.level) == ("d", "error")
    assert changed.limits == base.limits and changed.node.name == base.node.name
    assert base == Config(), "with_overrides must return a copy"


def test_bind_and_port_replace_the_first_listener_only() -> None:
    config = loads(
        '[[listeners]]\nbind = "10.0.0.1"\nport = 1883\nmax_connections = 5\n'
        '[[listeners]]\nbind = "10.0.0.2"\nport = 1884\n'
    )
    changed = config.with_overrides(port=11883)
    assert changed.listeners == (
        ListenerConfig(bind="10.0.0.1", port=11883, max_connections=5),
        ListenerConfig(bind="10.0.0.2", port=1884),
    )


def test_flags_win_over_the_file() -> None:
    config = loads('[node]\ndata_dir = "/srv/ab"\n[log]\nlevel = "warning"\n')
    assert config.with_overrides(data_dir="./data").node.data_dir == "./data"
    assert config.with_overrides(port=1).log.level == "warning"


def test_bad_flags_are_all_reported_with_the_flag_name() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        Config().with_overrides(bind="no such host!", port=65536, data_dir="", log_level="loud")
    errors = caught.value.errors
    assert [e.message for e in errors] == [
        '--bind must be an IP address or a host name, not "no such host!"',
        "--port must be from 0 to 65535 (0: a free port chosen by the system, for tests), "
        "not 65536",
        "--data-dir must not be empty",
        '--log-level must be "debug", "info", "warning" or "error", not "loud"',
    ]
    assert {e.source for e in errors} == {"command line"}
    assert {e.line for e in errors} == {None}
    assert [e.key for e in errors] == ["listeners.bind", "listeners.port", "node.data_dir",
                                       "log.level"]
    assert str(errors[1]).startswith("command line: --port must be")


def test_a_bool_is_not_a_port() -> None:
    with pytest.raises(InvalidConfigError, match="--port must be an integer, not a boolean"):
        Config().with_overrides(port=True)


def test_error_types_form_one_hierarchy_and_pickle() -> None:
    error = ConfigError("limits.max_qos must be 0, 1 or 2, not 3", source="a.toml", line=4,
                        key="limits.max_qos")
    assert isinstance(error, BrokerError) and str(error) == "a.toml:4: " + error.message
    assert pickle.loads(pickle.dumps(error)) == error
    group = InvalidConfigError([error, ConfigError("x", source="a.toml", line=2)],
                               source="a.toml")
    assert isinstance(group, ConfigError)
    assert [e.line for e in group.errors] == [2, 4]
    assert str(group) == "a.toml:2: x\na.toml:4: " + error.message
    assert pickle.loads(pickle.dumps(group)) == group
    with pytest.raises(ValueError):
        InvalidConfigError([])
