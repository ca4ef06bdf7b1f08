"""Validation: every error of a file is reported, each at the line of its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from actorbroker.config import check, load, loads
from actorbroker.errors import ConfigError, InvalidConfigError

BROKEN = """\
# line 1: a file with one error of each kind
[node]
name = "edge/1"
data_dir = "/srv/ab"

[log]
level = "verbose"

[[listeners]]
type = "udp"
port = 70000

[[listeners]]
port = "1884"
max_conections = 5

[limits]
max_inflight = 5
max_qos = 3
connect_timeout = 0
max_client_id_length = 22
queue_qos0_messages = 1
max_packet_size = 1e6
max_keepalive = -1

[limit]
x = 1

[sys]
interval = inf
"""

EXPECTED = [
    (3, "node.name must be made of letters, digits, '_', '.' and '-' (it names topics and files)"),
    (7, 'log.level must be "debug", "info", "warning" or "error", not "verbose"'),
    (10, 'listeners[0].type must be "tcp", "tls", "ws" or "wss", not "udp"'),
    (11, "listeners[0].port must be from 0 to 65535 (0: a free port chosen by the system, "
         "for tests), not 70000"),
    (14, 'listeners[1].port must be an integer, not a string ("1884")'),
    (15, "unknown option listeners[1].max_conections; did you mean max_connections?"),
    (18, "unknown option limits.max_inflight; did you mean max_inflight_messages?"),
    (19, "limits.max_qos must be 0, 1 or 2, not 3"),
    (20, "limits.connect_timeout must be more than 0 seconds, not 0"),
    (21, "[MQTT-3.1.3-5] limits.max_client_id_length must be from 23 to 65535, not 22"),
    (22, "limits.queue_qos0_messages must be a boolean, not an integer (1)"),
    (23, "limits.max_packet_size must be an integer, not a float (1000000.0)"),
    (24, "limits.max_keepalive must be from 10 to 65535 seconds, not -1"),
    (26, "unknown section [limit]; did you mean [limits]?"),
    (30, "sys.interval must be a finite number, not inf"),
]


def _errors(text: str, source: str = "f.toml") -> list[tuple[int | None, str]]:
    with pytest.raises(InvalidConfigError) as caught:
        loads(text, source=source)
    assert {e.source for e in caught.value.errors} == {source}
    return [(e.line, e.message) for e in caught.value.errors]


def test_every_error_of_a_file_is_reported_at_its_line() -> None:
    assert _errors(BROKEN) == EXPECTED


def test_errors_name_their_option_as_a_key() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        loads(BROKEN)
    keys = [e.key for e in caught.value.errors]
    assert keys[:4] == ["node.name", "log.level", "listeners[0].type", "listeners[0].port"]
    assert "limit" in keys and "listeners[1].max_conections" in keys


def test_check_and_load_read_files(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text(BROKEN)
    errors = check(path)
    assert [(e.line, e.message) for e in errors] == EXPECTED
    assert str(errors[0]) == f"{path}:3: {EXPECTED[0][1]}"
    with pytest.raises(InvalidConfigError) as caught:
        load(path)
    assert list(caught.value.errors) == errors
    path.write_text("[limits]\nmax_qos = 1\n")
    assert check(path) == [] and load(path).limits.max_qos == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Mosquitto's flat names, written at the top level or in the wrong section.
        ("max_inflight_messages = 10\n",
         "unknown top-level option max_inflight_messages; did you mean "
         "max_inflight_messages in [limits]?"),
        ('log_level = "debug"\n',
         "unknown top-level option log_level; did you mean level in [log]?"),
        ("[log]\nlevle = 1\n", "unknown option log.levle; did you mean level?"),
        ("sys_interval = 5\n",
         "unknown top-level option sys_interval; did you mean interval in [sys]?"),
        ("[node]\nport = 1\n", "unknown option node.port; did you mean port in [[listeners]]?"),
        ("[listener]\nport = 1\n", "unknown section [listener]; did you mean [[listeners]]?"),
        ("[[limit]]\nx = 1\n", "unknown section [[limit]]; did you mean [limits]?"),
        ("[retained]\nzzz = 1\n",
         "unknown option retained.zzz (options of [retained]: enabled, max_retained_messages)"),
        ("[frobnicate]\n", "unknown section [frobnicate]"),
        # By meaning, not spelling: "persistence" is as close to "listeners" as difflib's 0.6.
        ("[persistence]\nenabled = true\n",
         "unknown section [persistence]; did you mean [storage] (durability) or data_dir in [node]?"),
        ("[logging]\n", "unknown section [logging]; did you mean [log]?"),
    ],
)
def test_unknown_names_get_a_suggestion(text: str, expected: str) -> None:
    assert [m for _, m in _errors(text)] == [expected]


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("\n[listeners]\nport = 1\n", 2,
         "listeners must be an array of tables: write [[listeners]], not [listeners]"),
        ("listeners = []\n", 1,
         "listeners is empty: give at least one [[listeners]] table, or none for the default"),
        ("listeners = [1, 2]\n", 1, "listeners must be an array of tables ([[listeners]])"),
        ("limits = 5\n", 1, "[limits] must be a table, not an integer"),
        ("\n\nlog = []\n", 3, "[log] must be a table, not an array"),
        ("[limits]\nmax_qos = [2]\n", 2, "limits.max_qos must be an integer, not an array"),
        ("[limits.max_qos]\n", 1, "limits.max_qos must be an integer, not a table"),
        ("[node]\ndata_dir = 1979-05-27\n", 2,
         "node.data_dir must be a string, not a date (1979-05-27)"),
        ('[[listeners]]\nbind = "a..b"\n', 2,
         'listeners[0].bind must be an IP address or a host name, not "a..b"'),
        ("[sys]\ninterval = -0.5\n", 2, "sys.interval must be at least 0 seconds (0: no $SYS "
                                        "topics), not -0.5"),
        ("[retained]\nenabled = \"yes\"\n", 2,
         'retained.enabled must be a boolean, not a string ("yes")'),
        ("[[listeners]]\ntype = \"udp\"\n", 2,
         'listeners[0].type must be "tcp", "tls", "ws" or "wss", not "udp"'),
    ],
)
def test_shape_and_type_errors(text: str, line: int, expected: str) -> None:
    assert _errors(text) == [(line, expected)]


def test_accepted_edges() -> None:
    config = loads(
        "[limits]\nmax_packet_size = 20\nmax_client_id_length = 23\nmax_keepalive = 10\n"
        "max_qos = 0\nconnect_timeout = 0.001\nmax_inflight_messages = 65535\n"
        "[sys]\ninterval = 0\n"
        '[[listeners]]\nbind = "::"\nport = 0\n'
        '[[listeners]]\nbind = "broker.example.com"\nport = 0\n'
    )
    assert (config.limits.max_packet_size, config.limits.max_client_id_length) == (20, 23)
    assert config.sys.interval == 0.0 and config.listeners[1].bind == "broker.example.com"


def test_two_listeners_on_one_address_are_refused() -> None:
    text = (
        "[[listeners]]\n"             # 1
        "port = 1884\n"               # 2
        "[[listeners]]\n"             # 3
        'bind = "0.0.0.0"\n'          # 4
        "[[listeners]]\n"             # 5
        "port = 1884\n"               # 6
    )
    assert _errors(text) == [
        (5, "listeners[2] listens on 127.0.0.1:1884 like listeners[0] (line 1)"),
    ]


def test_toml_syntax_errors_are_reported_alone_at_tomllib_line() -> None:
    text = "[limits]\nmax_qos = 3\n\nmax_keepalive = = 1\n[nope]\n"
    assert _errors(text) == [(4, "TOML syntax: Invalid value (column 17)")]
    assert _errors("[a]\nb = 1\n[a]\n") == [
        (3, "TOML syntax: Cannot declare ('a',) twice (column 3)"),
    ]
    assert _errors('[node]\nname = "unterminated\n') == [
        (2, "TOML syntax: Illegal character '\\n' (column 21)"),
    ]


def test_a_syntax_error_at_the_end_points_at_the_last_written_line() -> None:
    # tomllib says "at end of document"; the last line with text is more useful.
    assert _errors('[node]\nname = """never closed\n\n\n') == [
        (2, "TOML syntax: Unterminated string"),
    ]
    assert _errors("x = [1,\n2,\n\n") == [(2, "TOML syntax: Invalid value")]


def test_unreadable_and_undecodable_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    assert check(missing) == [
        ConfigError("cannot read the file: No such file or directory", source=str(missing)),
    ]
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[node]\n# caf\xe9\nname = "x"\n')
    assert [(e.line, e.message) for e in check(latin)] == [(2, "the file is not valid UTF-8")]


@pytest.mark.parametrize(("text", "message"), [
    ('[log]\nlevels = { "a b" = "debug" }\n',
     "log.levels has 'a b', which is not a logger name such as actorbroker.session"),
    ('[log]\nlevels = { "actorbroker" = "loud" }\n',
     "log.levels gives actorbroker the level 'loud': it must be \"debug\", \"info\", "
     "\"warning\" or \"error\""),
    ('[log]\nlevels = { "actorbroker" = 10 }\n', "log.levels gives actorbroker the level 10"),
    ("[log]\nlevels = []\n", "log.levels must be a table, not an array"),
    ('[log]\ntrace = ["ok-*", 1]\n',
     "log.trace must hold client id patterns (non-empty strings), not 1"),
    ('[log]\ntrace = [""]\n', "log.trace must hold client id patterns (non-empty strings)"),
    ('[log]\ntrace = "a*"\n', 'log.trace must be an array, not a string ("a*")'),
    ('[log]\nformat = "xml"\n', 'log.format must be "text" or "json", not "xml"'),
])
def test_log_tables_and_arrays_are_checked_inside(text: str, message: str) -> None:
    with pytest.raises(InvalidConfigError) as refused:
        loads(text, source="b.toml")
    [error] = refused.value.errors
    assert error.line == 2 and message in str(error)


def test_log_tables_and_arrays_accepted() -> None:
    config = loads('[log]\nformat = "json"\nlevels = { "actorbroker.session" = "debug" }\n'
                   'trace = ["sensor-*", "debug?"]\n')
    assert config.log.format == "json"
    assert config.log.levels == {"actorbroker.session": "debug"}
    assert config.log.trace == ["sensor-*", "debug?"]
