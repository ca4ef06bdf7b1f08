"""A mosquitto.conf given as the configuration: a pointer to the docs, each option translated."""

from __future__ import annotations

import re
from pathlib import Path

from actorbroker.config import SECTIONS, check, loads
from actorbroker.config.mosquitto import HINT, MOSQUITTO_OPTIONS, mosquitto_lines
from actorbroker.config.render import DOCS_DIR

DEBIAN = """\
# Place your local configuration in /etc/mosquitto/conf.d/
pid_file /run/mosquitto/mosquitto.pid

persistence true
persistence_location /var/lib/mosquitto/

log_dest file /var/log/mosquitto/mosquitto.log
include_dir /etc/mosquitto/conf.d
listener 1883 0.0.0.0
allow_anonymous false
cafile /etc/mosquitto/ca.crt
"""


def test_a_mosquitto_conf_gets_the_hint_then_each_option(tmp_path: Path) -> None:
    path = tmp_path / "mosquitto.conf"
    path.write_text(DEBIAN)
    errors = [(e.line, e.message) for e in check(path)]
    assert errors[0] == (2, HINT)
    assert [line for line, _ in errors[1:]] == [2, 4, 5, 7, 8, 9, 10, 11]
    assert (11, "mosquitto's cafile: " + MOSQUITTO_OPTIONS["cafile"]) in errors
    assert not [m for _, m in errors if "TOML syntax" in m]


def test_toml_gone_wrong_is_not_taken_for_mosquitto() -> None:
    assert mosquitto_lines("[[listeners]]\nport = 1883\nbind = = 1\n") == []
    assert mosquitto_lines("frobnicate 12\n# listener 1883\n") == []
    assert mosquitto_lines("  max_qos 1  \n") == [(1, "max_qos", MOSQUITTO_OPTIONS["max_qos"])]


def _docs_section() -> str:
    text = (DOCS_DIR / "configuration.md").read_text()
    return text[text.index("## Coming from Mosquitto"):]


def test_the_docs_section_lists_every_option_and_its_example_loads() -> None:
    section = _docs_section()
    for name in MOSQUITTO_OPTIONS:
        assert f"| `{name}` |" in section
    example = re.search(r"```toml\n(.*?)```", section, re.S)
    assert example is not None
    config = loads(example.group(1))
    assert (config.listeners[0].bind, config.node.data_dir) == ("0.0.0.0", "/var/lib/actorbroker")
    assert not config.auth.allow_anonymous


def test_every_equivalent_names_real_options() -> None:
    """`[section] option` in the table must exist, so the docs cannot drift from the schema."""
    known = {(s.header, name) for s in SECTIONS for name, _ in s.options()}
    for equivalent in MOSQUITTO_OPTIONS.values():
        for header, name in re.findall(r"`(\[\[?\w+\]\]?) (\w+)`", equivalent):
            assert (header, name) in known, equivalent
