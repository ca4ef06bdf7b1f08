"""Configuration layer: docs/configuration.md and the example file, generated from the schema. Imports the stdlib and actorbroker.errors only.

``python -m actorbroker.config --write`` regenerates both files; ``--check``
exits 1 when one is stale, and tests/unit/config fails while one is.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from .mosquitto import MOSQUITTO_OPTIONS
from .options import Option, toml_literal
from .schema import OVERRIDES, SECTIONS, Config, ListenerConfig, Section

__all__ = ["DOCS_DIR", "describe", "render_example", "render_markdown", "stale_files", "write_all"]

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
MARKDOWN_NAME = "configuration.md"
EXAMPLE_NAME = "actorbroker.example.toml"
_GENERATED = (
    "Generated from actorbroker/config/schema.py by "
    "`python -m actorbroker.config --write`; do not edit."
)


def _default_literal(section: Section, name: str, spec: Option) -> str:
    if spec.default_doc is not None:
        return spec.default_doc
    field = next(f for f in dataclasses.fields(section.cls) if f.name == name)
    if field.default_factory is not dataclasses.MISSING:  # a table or an array
        return toml_literal(field.default_factory())
    return toml_literal(field.default)




def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown() -> str:
    """The text of docs/configuration.md."""
    out = [
        "# Configuration",
        "",
        f"<!-- {_GENERATED} -->",
        "",
        "actorbroker reads one TOML file, given with `actorbroker serve --config FILE`",
        "(or `-c FILE`, as Mosquitto). Every option has a default, so a file holds only",
        "what differs; without a file `serve` runs on the defaults: one TCP listener on",
        "127.0.0.1:1883, data in `./data`. Values are taken from the defaults, then the",
        "file, then the command line flags. A broker embedded in code without a",
        "`data_dir` keeps everything in memory and writes no file.",
        "",
        "`actorbroker check-config FILE` reports every error of a file, one per line as",
        "`FILE:LINE: message` (unknown sections and options with a suggestion, wrong",
        "types, values out of range), and exits 1; it prints `ok` and exits 0 when the",
        "file is valid. A TOML syntax error stops the parser, so it is reported alone.",
        "`serve` refuses to start on an invalid file with the same messages.",
        "",
        f"[`{EXAMPLE_NAME}`]({EXAMPLE_NAME}) sets every option to its default.",
        "",
        "In code: `actorbroker.config.load(path)` returns a frozen `Config` (sections",
        "as attributes: `config.limits.max_qos`, `config.listeners[0].port`) or raises",
        "`InvalidConfigError`, whose `errors` lists each `ConfigError` with its `line`.",
        "",
        "## Command line flags",
        "",
        "| flag | replaces |",
        "| --- | --- |",
    ]
    for flag, (_keyword, section_name, name) in OVERRIDES.items():
        section = next(s for s in SECTIONS if s.name == section_name)
        where = "the first " if section.is_array else ""
        out.append(f"| `{flag}` | `{name}` of {where}`{section.header}` |")
    out += ["", "`-p N` is `--port N`, as Mosquitto's flag. `--http-port N` also sets "
                "`[http] enabled = true`."]
    for section in SECTIONS:
        out += ["", f"## `{section.header}`", ""]
        out.append(" ".join((section.cls.__doc__ or "").split()))
        out += ["", "| option | default | allowed | meaning |", "| --- | --- | --- | --- |"]
        for name, spec in section.options():
            default = _default_literal(section, name, spec)
            default = default if spec.default_doc else f"`{default}`"
            out.append(
                f"| `{name}` | {_cell(default)} | {_cell(spec.allowed())} | {_cell(spec.help)} |"
            )
    return "\n".join(out + _mosquitto_section()) + "\n"


def _mosquitto_section() -> list[str]:
    out = [
        "", "## Coming from Mosquitto", "",
        "actorbroker does not read mosquitto.conf: given one, `serve` and `check-config`",
        "say so and translate each option they recognise. The common options and what",
        "to write instead (\"none yet\": a feature actorbroker lacks today):",
        "", "| mosquitto.conf | actorbroker |", "| --- | --- |",
    ]
    out += [f"| `{name}` | {_cell(equivalent)} |" for name, equivalent in MOSQUITTO_OPTIONS.items()]
    out += [
        "",
        "A minimal translation of a typical mosquitto.conf:",
        "",
        "```toml",
        "# listener 1883 0.0.0.0 / allow_anonymous false / password_file ... /",
        "# persistence true / persistence_location /var/lib/mosquitto/",
        "[node]",
        'data_dir = "/var/lib/actorbroker"',
        "",
        "[[listeners]]",
        'bind = "0.0.0.0"',
        "port = 1883",
        "",
        "[auth]",
        "allow_anonymous = false",
        'password_file = "/etc/mosquitto/passwd"',
        "```",
    ]
    return out


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=78, initial_indent="# ", subsequent_indent="# ")


def render_example() -> str:
    """The text of docs/actorbroker.example.toml: every option at its default."""
    out = [
        "# actorbroker configuration: every option, set to its default.",
        f"# {_GENERATED}",
        "# Reference: docs/configuration.md. Check a file: actorbroker check-config FILE",
    ]
    for section in SECTIONS:
        out += ["", *_comment(" ".join((section.cls.__doc__ or "").split())), section.header]
        for name, spec in section.options():
            out += ["", *_comment(spec.help)]
            if spec.default_doc is not None:
                placeholder = '"..."' if spec.kind is str else "..."
                out.append(f"# {name} = {placeholder}  # default: {spec.default_doc}")
            else:
                out.append(f"{name} = {_default_literal(section, name, spec)}")
    return "\n".join(out) + "\n"


def describe(config: Config) -> list[str]:
    """A short summary of what a configuration will run (``serve`` prints it)."""
    node, limits = config.node, config.limits
    where = (f"data in {node.data_dir}" if node.data_dir is not None
             and config.storage.durability != "memory" else "data in memory")
    lines = [f"node {node.name}, {where}, log level {config.log.level}"]
    for listener in config.listeners:
        most = listener.max_connections or "unlimited"
        lines.append(f"listener {listener.type} {listener.bind}:{listener.port}, "
                     f"at most {most} connections{_listener_extras(listener)}")
    lines.append(f"limits: packets up to {limits.max_packet_size} bytes, "
                 f"{limits.max_inflight_messages} in flight, "
                 f"{limits.max_queued_messages or 'unlimited'} queued, QoS up to {limits.max_qos}")
    sys_topics = f"every {toml_literal(config.sys.interval)} s" if config.sys.interval else "off"
    lines.append(f"$SYS topics {sys_topics}; retained messages "
                 f"{'on' if config.retained.enabled else 'off'}")
    return lines


def _listener_extras(listener: ListenerConfig) -> str:
    """What a tls/ws/wss listener adds to its summary line."""
    extras = []
    if listener.type in ("ws", "wss"):
        extras.append(f"path {listener.path or 'any'}")
    if listener.type in ("tls", "wss"):
        extras.append(f"TLS {listener.tls_version.removeprefix('tlsv')} and later")
        if listener.require_certificate:
            extras.append("client certificates required"
                          + (", their name is the user" if listener.use_identity_as_username
                             else ""))
    return "".join(f", {extra}" for extra in extras)


def _generated() -> dict[str, str]:
    return {MARKDOWN_NAME: render_markdown(), EXAMPLE_NAME: render_example()}


def stale_files(docs_dir: Path = DOCS_DIR) -> list[str]:
    """Names of the generated files under ``docs_dir`` that differ from the schema."""
    stale = []
    for name, text in _generated().items():
        path = docs_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


def write_all(docs_dir: Path = DOCS_DIR) -> list[Path]:
    """Regenerate both files; return their paths."""
    written = []
    for name, text in _generated().items():
        path = docs_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
