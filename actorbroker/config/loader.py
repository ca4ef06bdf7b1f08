"""Configuration layer: TOML text -> Config, reporting every error with its line. Imports the stdlib and actorbroker.errors only.

:func:`loads` parses with tomllib, then walks the result against
:data:`~actorbroker.config.schema.SECTIONS` and collects every problem (unknown
section or option with a "did you mean", wrong type, value out of range, a
options that do not fit their listener's type, two listeners on one address) before raising one
:class:`~actorbroker.errors.InvalidConfigError`. A TOML syntax error stops
tomllib at the first one, so it is reported alone, at tomllib's line.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from actorbroker.errors import ConfigError, InvalidConfigError

from .listeners import listener_problems
from .locate import KeyPath, key_lines, line_of
from .mosquitto import HINT, mosquitto_lines
from .options import toml_type_name
from .schema import SECTIONS, Config, ListenerConfig, Section

__all__ = ["check", "load", "loads"]

_DEFAULT_LISTENER = ListenerConfig()
_TOMLLIB_WHERE = re.compile(r" \((?:at line (\d+), column (\d+)|at end of document)\)$")


def load(path: str | os.PathLike[str]) -> Config:
    """Read and check a configuration file; raise InvalidConfigError listing every error."""
    config, errors = _load_file(os.fspath(path))
    if errors:
        raise InvalidConfigError(errors, source=os.fspath(path))
    assert config is not None
    return config


def loads(text: str, *, source: str = "<string>") -> Config:
    """Check configuration text; ``source`` names it in error messages."""
    config, errors = _parse(text, source)
    if errors:
        raise InvalidConfigError(errors, source=source)
    assert config is not None
    return config


def check(path: str | os.PathLike[str]) -> list[ConfigError]:
    """Every error in a configuration file, by line; empty when it is valid."""
    return sorted(_load_file(os.fspath(path))[1], key=lambda e: (e.line is None, e.line or 0))


def _load_file(path: str) -> tuple[Config | None, list[ConfigError]]:
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        return None, [ConfigError(f"cannot read the file: {exc.strerror}", source=path)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return None, [ConfigError("the file is not valid UTF-8", source=path, line=line)]
    return _parse(text, path)


def _parse(text: str, source: str) -> tuple[Config | None, list[ConfigError]]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        mosquitto = mosquitto_lines(text)
        if mosquitto:
            return None, [ConfigError(HINT, source=source, line=mosquitto[0][0]), *(
                ConfigError(f"mosquitto's {name}: {equivalent}", source=source, line=line)
                for line, name, equivalent in mosquitto)]
        return None, [_syntax_error(str(exc), text, source)]
    walk = _Walk(source, key_lines(text))
    config = walk.config(document)
    return (None if walk.errors else config), walk.errors


def _syntax_error(message: str, text: str, source: str) -> ConfigError:
    found = _TOMLLIB_WHERE.search(message)
    if found is None:
        return ConfigError(f"TOML syntax: {message}", source=source)
    message = message[:found.start()]
    if found.group(1) is None:  # end of document: point at the last line with content
        return ConfigError(f"TOML syntax: {message}", source=source,
                           line=text.rstrip().count("\n") + 1)
    return ConfigError(f"TOML syntax: {message} (column {found.group(2)})", source=source,
                       line=int(found.group(1)))


def _label(path: KeyPath) -> str:
    """``("listeners", 1, "port")`` -> ``listeners[1].port``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


@dataclass
class _Walk:
    """One pass over a parsed document; fills ``errors``."""

    source: str
    lines: dict[KeyPath, int]
    errors: list[ConfigError] = field(default_factory=list)

    def error(self, path: KeyPath, message: str) -> None:
        self.errors.append(ConfigError(
            message, source=self.source, line=line_of(self.lines, path), key=_label(path),
        ))

    def config(self, document: dict[str, Any]) -> Config:
        sections = {s.name: s for s in SECTIONS}
        built: dict[str, Any] = {}
        for name, value in document.items():
            section = sections.get(name)
            if section is None:
                if isinstance(value, dict):
                    what = f"section [{name}]"
                elif isinstance(value, list) and value and isinstance(value[0], dict):
                    what = f"section [[{name}]]"
                else:
                    what = f"top-level option {name}"
                self.error((name,), f"unknown {what}{_suggest_section(name)}")
            elif section.is_array:
                built[name] = self.array_of_tables(section, value)
            elif not isinstance(value, dict):
                self.error((name,), f"{section.header} must be a table, not "
                                    f"{_a(toml_type_name(value))}")
            else:
                built[name] = self.table(section, value, (name,))
        return Config(**{k: v for k, v in built.items() if v is not None})

    def array_of_tables(self, section: Section, value: Any) -> tuple[Any, ...] | None:
        name = section.name
        if isinstance(value, dict):
            self.error((name,), f"{name} must be an array of tables: write "
                                f"{section.header}, not [{name}]")
            return None
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.error((name,), f"{name} must be an array of tables ({section.header})")
            return None
        if not value:
            self.error((name,), f"{name} is empty: give at least one {section.header} "
                                "table, or none for the default")
            return None
        items = tuple(self.table(section, v, (name, i)) for i, v in enumerate(value))
        self.distinct_addresses(value)
        return items

    def distinct_addresses(self, listeners: list[dict[str, Any]]) -> None:
        default = ListenerConfig()
        seen: dict[tuple[str, int], int] = {}
        for index, listener in enumerate(listeners):
            address = (listener.get("bind", default.bind), listener.get("port", default.port))
            if type(address[0]) is not str or type(address[1]) is not int or address[1] == 0:
                continue  # a wrong type is reported by itself; port 0 never collides
            if address in seen:
                first = seen[address]
                where = line_of(self.lines, ("listeners", first))
                self.error(("listeners", index),
                           f"listeners[{index}] listens on {address[0]}:{address[1]} like "
                           f"listeners[{first}] (line {where})")
            else:
                seen[address] = index

    def table(self, section: Section, value: dict[str, Any], path: KeyPath) -> Any:
        options = dict(section.options())
        accepted: dict[str, Any] = {}
        for key, item in value.items():
            spec = options.get(key)
            if spec is None:
                self.error((*path, key), f"unknown option {_label((*path, key))}"
                                         f"{_suggest_option(key, section)}")
                continue
            checked, message = spec.check(item, _label((*path, key)))
            if message is None:
                accepted[key] = checked
            else:
                self.error((*path, key), message)
        if section.cls is ListenerConfig:
            defaults = {name: getattr(_DEFAULT_LISTENER, name) for name, _ in section.options()}
            problems = listener_problems(SimpleNamespace(**{**defaults, **accepted}))
            for name, why in problems:
                where = (*path, name) if name in value else path  # a missing certfile: the table
                self.error(where, f"{_label((*path, name))} {why}")
            if problems:
                return _DEFAULT_LISTENER  # a stand-in: the errors discard the Config
        return section.cls(**accepted)


def _a(name: str) -> str:
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


#: Sections other brokers' users reach for, by meaning rather than spelling.
_SECTION_ALIASES = {
    "persistence": "[storage] (durability) or data_dir in [node]",
    "logging": "[log]",
    "security": "[auth]",
    "authentication": "[auth]",
}


def _suggest_section(name: str) -> str:
    """A hint for an unknown top-level key: a section, or an option written flat.

    Spelling only counts when close (cutoff 0.75): at difflib's default 0.6,
    ``persistence`` would suggest ``[[listeners]]``.
    """
    if name.lower() in _SECTION_ALIASES:
        return f"; did you mean {_SECTION_ALIASES[name.lower()]}?"
    headers = {s.name: s.header for s in SECTIONS}
    close = difflib.get_close_matches(name, list(headers), n=1, cutoff=0.75)
    if close:
        return f"; did you mean {headers[close[0]]}?"
    return _elsewhere(name, exclude=None) or ""


def _suggest_option(key: str, section: Section) -> str:
    """A hint for an unknown option: a close name here, or the section it belongs to."""
    names = [name for name, _ in section.options()]
    close = difflib.get_close_matches(key, names, n=1)
    if close:
        return f"; did you mean {close[0]}?"
    elsewhere = _elsewhere(key, exclude=section)
    if elsewhere:
        return elsewhere
    return f" (options of {section.header}: {', '.join(names)})"


def _elsewhere(key: str, exclude: Section | None) -> str | None:
    """'; did you mean max_qos in [limits]?' when ``key`` names an option of another section.

    Also knows Mosquitto's flat names that only differ by a section prefix,
    e.g. ``log_level`` or ``sys_interval``.
    """
    candidates: dict[str, tuple[str, Section]] = {}
    for section in SECTIONS:
        if section is exclude:
            continue
        for name, _ in section.options():
            candidates.setdefault(name, (name, section))
            candidates.setdefault(f"{section.name}_{name}", (name, section))
            if section.name.endswith("s"):
                candidates.setdefault(f"{section.name[:-1]}_{name}", (name, section))
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.8)
    if not close:
        return None
    name, section = candidates[close[0]]
    return f"; did you mean {name} in {section.header}?"
