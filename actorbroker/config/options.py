"""Configuration layer: what one option accepts, written once. Imports the stdlib only.

Each field of a section dataclass carries an :class:`Option` in its metadata
(made by :func:`option`): the help text that the docs and the example file are
generated from, and the constraints that :meth:`Option.check` applies to a value
read from TOML or given on the command line.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Option", "option", "toml_literal", "toml_type_name"]

_METADATA_KEY = "actorbroker.option"


@dataclass(frozen=True, slots=True)
class Option:
    """Help text and constraints of one option.

    ``kind`` is the Python type of the field (str, int, float or bool; dict
    for a table and list for an array, whose ``extra`` checks their items).
    ``minimum``/``maximum`` bound numbers inclusively, ``above`` exclusively;
    ``choices`` lists the accepted values; ``not_yet`` lists values that a
    later release will accept (refused with "not supported yet"); ``zero``
    says what 0 means, e.g. "unlimited"; ``unit`` follows numbers in the docs;
    ``default_doc`` replaces the default in the docs when it is computed at
    start-up (e.g. the host name); ``rule`` is an MQTT rule id that explains a
    bound; ``values`` describes the accepted values in words when the
    constraints do not (the docs show it); ``extra`` is a further check of a
    well-typed value that returns why it is refused, or None.
    """

    help: str
    kind: type
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    choices: tuple[object, ...] = ()
    not_yet: tuple[object, ...] = ()
    zero: str | None = None
    unit: str | None = None
    default_doc: str | None = None
    rule: str | None = None
    values: str | None = None
    extra: Callable[[Any], str | None] | None = None

    def check(self, value: object, label: str) -> tuple[object, str | None]:
        """Return (value as the field's type, None), or (value, message) when refused.

        ``label`` names the option in the message (``limits.max_qos``,
        ``--port``). TOML integers are accepted where a float is expected;
        booleans are never numbers, and floats are never integers.
        """
        reason = self._reason(value)
        if reason is None:
            if self.kind is float and isinstance(value, int):
                return float(value), None
            return value, None
        if self.rule and reason.startswith("must be " + self.allowed()):
            return value, f"{self.rule} {label} {reason}"
        return value, f"{label} {reason}"

    def _reason(self, value: object) -> str | None:
        if type(value) is not self.kind and not (self.kind is float and type(value) is int):
            return f"must be {_article(toml_kind_name(self.kind))}, not {_describe(value)}"
        if value in self.not_yet:
            return f"{toml_literal(value)} is not supported yet (only {_one_of(self.choices)})"
        if self.choices and value not in self.choices:
            return f"must be {_one_of(self.choices)}, not {toml_literal(value)}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, not {toml_literal(value)}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            refused = (
                (self.minimum is not None and value < self.minimum)
                or (self.above is not None and value <= self.above)
                or (self.maximum is not None and value > self.maximum)
            )
            if refused:
                return f"must be {self.allowed()}, not {toml_literal(value)}"
        return None if self.extra is None else self.extra(value)

    def allowed(self) -> str:
        """The accepted values in words, for messages and docs."""
        if self.values is not None:
            return self.values
        if self.choices:
            return _one_of(self.choices)
        if self.kind is bool:
            return "true or false"
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            text = f"from {_number(low)} to {_number(high)}"
        elif low is not None:
            text = f"at least {_number(low)}"
        elif self.above is not None:
            text = f"more than {_number(self.above)}"
        elif high is not None:
            text = f"at most {_number(high)}"
        else:
            return f"any {toml_kind_name(self.kind)}"
        if self.unit:
            text += f" {self.unit}"
        if self.zero:
            text += f" (0: {self.zero})"
        return text


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,  # noqa: A002 - the natural name, as in argparse
    kind: type | None = None,
    default_factory: Callable[[], Any] | None = None,
    **constraints: Any,
) -> Any:
    """A dataclass field with its :class:`Option` in the metadata.

    ``kind`` defaults to the type of ``default``; give it with ``default_factory``.
    """
    if kind is None:
        kind = type(default)
    meta = {_METADATA_KEY: Option(help=" ".join(help.split()), kind=kind, **constraints)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def option_of(field: dataclasses.Field[Any]) -> Option:
    """The :class:`Option` of a field made by :func:`option`."""
    found = field.metadata.get(_METADATA_KEY)
    if not isinstance(found, Option):
        raise TypeError(f"field {field.name} was not declared with option()")
    return found


def toml_kind_name(kind: type) -> str:
    return {str: "string", int: "integer", float: "float", bool: "boolean", dict: "table",
            list: "array"}[kind]


def toml_type_name(value: object) -> str:
    """The TOML name of the type of a value that tomllib produced."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (str, int, float)):
        return toml_kind_name(type(value))
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    if isinstance(value, datetime.datetime):
        return "datetime"
    if isinstance(value, datetime.date):
        return "date"
    if isinstance(value, datetime.time):
        return "time"
    return type(value).__name__


def toml_literal(value: object) -> str:
    """``value`` written as in a TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, dict):
        items = ", ".join(f"{_key(k)} = {toml_literal(v)}" for k, v in value.items())
        return f"{{ {items} }}" if items else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else str(value)
    return str(value)


def _key(name: object) -> str:
    """A TOML key: bare when it can be, quoted otherwise (a dotted logger name)."""
    text = str(name)
    bare = text and all(c.isalnum() or c in "_-" for c in text)
    return text if bare else toml_literal(text)


def _describe(value: object) -> str:
    name = toml_type_name(value)
    if isinstance(value, (dict, list)):
        return _article(name)
    return f"{_article(name)} ({toml_literal(value)})"


def _article(name: str) -> str:
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _one_of(choices: tuple[object, ...]) -> str:
    literals = [toml_literal(c) for c in choices]
    if len(literals) == 1:
        return literals[0]
    return ", ".join(literals[:-1]) + " or " + literals[-1]
