"""Persistence layer: the binary field kinds record bodies are made of. Imports the stdlib and actorbroker.errors only.

A record type is a frozen dataclass whose fields are declared with
:func:`wire`, which names the field's :class:`Kind`. :class:`BodyCodec`
compiles one encoder/decoder per record type from those declarations.
Wire order:

* fixed-size fields (integers, booleans), in declaration order, packed with
  one :class:`struct.Struct`;
* variable-size fields, in declaration order, each with its length in front
  (TEXT: u16 byte count then UTF-8; BLOB: u32 byte count then the bytes;
  U32_LIST: u16 item count then u32 items);
* fields declared ``appended=True`` (added to a type after its version was
  released), in declaration order: a body that ends before one of them
  decodes with its default, so old records stay readable without a new
  version, and old readers ignore the new bytes.

All integers are big-endian (network order, as MQTT). The same declarations
render the byte tables of docs/storage.md (:func:`layout`), so the document
cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from actorbroker.errors import CorruptRecordError

__all__ = ["BodyCodec", "Kind", "Wire", "layout", "wire"]

_METADATA_KEY = "actorbroker.persistence.wire"
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


class Kind(Enum):
    """Wire kinds: (struct code or None for variable size, size text, description)."""

    U8 = ("B", "1", "unsigned 8-bit integer")
    U16 = ("H", "2", "unsigned 16-bit integer, big-endian")
    U32 = ("I", "4", "unsigned 32-bit integer, big-endian")
    U64 = ("Q", "8", "unsigned 64-bit integer, big-endian")
    I64 = ("q", "8", "signed 64-bit integer, big-endian")
    BOOL = ("?", "1", "0 = false, 1 = true")
    TEXT = (None, "2 + n", "u16 byte count n, then n bytes of UTF-8")
    BLOB = (None, "4 + n", "u32 byte count n, then n bytes")
    U32_LIST = (None, "2 + 4n", "u16 item count n, then n u32 items")

    @property
    def code(self) -> str | None:
        code: str | None = self.value[0]
        return code

    @property
    def size_text(self) -> str:
        text: str = self.value[1]
        return text

    @property
    def description(self) -> str:
        text: str = self.value[2]
        return text


@dataclass(frozen=True, slots=True)
class Wire:
    """How one field travels: its kind, its doc, an optional inclusive maximum,
    and whether it was appended to a released layout."""

    kind: Kind
    doc: str
    maximum: int | None = None
    appended: bool = False


def wire(
    kind: Kind, doc: str, *, default: Any = dataclasses.MISSING, maximum: int | None = None,
    appended: bool = False,
) -> Any:
    """A dataclass field carrying its :class:`Wire` description in the metadata.

    An ``appended`` field needs a default: records written before it existed
    decode with it.
    """
    if appended and default is dataclasses.MISSING:
        raise TypeError("an appended field needs a default")
    meta = {_METADATA_KEY: Wire(kind, " ".join(doc.split()), maximum, appended)}
    return dataclasses.field(default=default, metadata=meta)


def _wire_fields(cls: type[Any]) -> list[tuple[str, Wire, Any]]:
    """(name, Wire, default) of the body fields of a record class, in declaration order."""
    return [
        (f.name, f.metadata[_METADATA_KEY], f.default)
        for f in dataclasses.fields(cls) if isinstance(f.metadata.get(_METADATA_KEY), Wire)
    ]


def layout(cls: type[Any]) -> list[tuple[str, Wire]]:
    """The body fields of ``cls`` in wire order."""
    return [(name, spec) for name, spec, _ in _wire_order(cls)]


def _wire_order(cls: type[Any]) -> list[tuple[str, Wire, Any]]:
    fields = _wire_fields(cls)
    fixed = [f for f in fields if f[1].kind.code is not None and not f[1].appended]
    variable = [f for f in fields if f[1].kind.code is None and not f[1].appended]
    return fixed + variable + [f for f in fields if f[1].appended]


class BodyCodec:
    """Encoder and decoder of the body of one record type, compiled from its fields.

    The two functions are generated as Python source (as :mod:`dataclasses`
    generates ``__init__``), one straight line per field: about twice as
    fast as interpreting the field list for every record.
    """

    __slots__ = ("_decode", "_encode", "cls")

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        order = _wire_order(cls)
        fixed = [(n, s) for n, s, _ in order if s.kind.code is not None and not s.appended]
        fixed_struct = struct.Struct(">" + "".join(str(s.kind.code) for _, s in fixed))
        space: dict[str, Any] = {
            "FIXED": fixed_struct, "U16": _U16, "U32": _U32, "cls": cls, "pack": struct.pack,
            "unpack_from": struct.unpack_from, "Corrupt": CorruptRecordError, "ValueError": ValueError,
            "DEFAULTS": {n: d for n, s, d in order if s.appended},
        }
        exec(_encoder_source(cls.__name__, order, fixed), space)  # noqa: S102
        exec(_decoder_source(cls, order, fixed, fixed_struct.size), space)  # noqa: S102
        self._encode: Callable[[Any, bytearray], None] = space["encode"]
        self._decode: Callable[[bytes | memoryview, int, int, bool], Any] = space["decode"]

    def encode(self, record: Any, out: bytearray) -> None:
        """Append the body of ``record`` to ``out``; ValueError if a field does not fit."""
        try:
            self._encode(record, out)
        except struct.error as exc:
            raise ValueError(f"{self.cls.__name__}: {exc}") from None

    def decode(self, buf: bytes | memoryview, pos: int, timestamp_us: int, restated: bool) -> Any:
        """The record whose body starts at ``buf[pos]``.

        Bytes after the last known field are ignored, missing appended fields
        take their defaults. Raises CorruptRecordError when the body is short,
        holds invalid UTF-8 or a value above its maximum.
        """
        try:
            return self._decode(buf, pos, timestamp_us, restated)
        except UnicodeDecodeError:
            raise CorruptRecordError(f"{self.cls.__name__} holds text that is not valid UTF-8") from None


def _encoder_source(name: str, order: list[tuple[str, Wire, Any]], fixed: list[tuple[str, Wire]]) -> str:
    lines = ["def encode(record, out):"]
    for field_name, spec, _ in order:
        if spec.maximum is not None:
            lines += [f"    if not 0 <= record.{field_name} <= {spec.maximum}:",
                      f"        raise ValueError(f'{name}.{field_name} must be 0..{spec.maximum}, "
                      f"not {{record.{field_name}}}')"]
    if fixed:
        lines.append(f"    out += FIXED.pack({', '.join(f'record.{n}' for n, _ in fixed)})")
    for field_name, spec, _ in order:
        if spec.kind.code is not None and not spec.appended:
            continue
        what = f"{name}.{field_name}"
        if spec.kind is Kind.TEXT:
            lines += [f"    b = record.{field_name}.encode('utf-8')",
                      f"    if len(b) > 65535: raise ValueError('{what} is longer than 65535 bytes')",
                      "    out += U16.pack(len(b))", "    out += b"]
        elif spec.kind is Kind.BLOB:
            lines += [f"    b = record.{field_name}",
                      f"    if len(b) > 0xFFFFFFFF: "
                      f"raise ValueError('{what} is longer than 2**32-1 bytes')",
                      "    out += U32.pack(len(b))", "    out += b"]
        elif spec.kind is Kind.U32_LIST:
            lines += [f"    v = record.{field_name}",
                      f"    if len(v) > 65535: raise ValueError('{what} has more than 65535 items')",
                      "    out += U16.pack(len(v))",
                      "    try: out += pack(f'>{len(v)}I', *v)",
                      f"    except Exception as e: raise ValueError(f'{what}: {{e}}') from None"]
        else:
            lines.append(f"    out += pack('>{spec.kind.code}', record.{field_name})")
    return "\n".join(lines) + "\n"


def _decoder_source(
    cls: type[Any], order: list[tuple[str, Wire, Any]], fixed: list[tuple[str, Wire]], fixed_size: int,
) -> str:
    name = cls.__name__
    lines = ["def decode(buf, pos, timestamp_us, restated):", "    end = len(buf)"]
    if fixed:
        lines += [f"    if pos + {fixed_size} > end: raise Corrupt('{name} body is truncated')",
                  f"    {''.join('f_' + n + ', ' for n, _ in fixed)}= FIXED.unpack_from(buf, pos)",
                  f"    pos += {fixed_size}"]
    for field_name, spec, _ in order:
        if spec.kind.code is not None and not spec.appended:
            continue
        steps = _read_field(f"{name}.{field_name}", f"f_{field_name}", spec.kind)
        if spec.appended:  # absent from records written before it existed
            lines += ["    if pos < end:", *("    " + line for line in steps),
                      f"    else: f_{field_name} = DEFAULTS['{field_name}']"]
        else:
            lines += steps
    for field_name, spec, _ in order:
        if spec.maximum is not None:
            lines.append(f"    if f_{field_name} > {spec.maximum}: "
                         f"raise Corrupt('{name}.{field_name} is above {spec.maximum}')")
    arguments = "".join(f"f_{n}, " for n, _, _ in _wire_fields(cls))  # declaration order
    lines.append(f"    return cls({arguments}timestamp_us=timestamp_us, restated=restated)")
    return "\n".join(lines) + "\n"


def _read_field(what: str, target: str, kind: Kind) -> list[str]:
    """Lines (indented 4) that read one field at ``pos`` into ``target`` and advance ``pos``."""
    if kind.code is not None:
        width = struct.calcsize(">" + kind.code)
        return [f"    if pos + {width} > end: raise Corrupt('{what} is truncated')",
                f"    ({target},) = unpack_from('>{kind.code}', buf, pos)", f"    pos += {width}"]
    width, prefix = (4, "U32") if kind is Kind.BLOB else (2, "U16")
    size = "4 * n" if kind is Kind.U32_LIST else "n"
    lines = [f"    if pos + {width} > end: raise Corrupt('{what} length is truncated')",
             f"    (n,) = {prefix}.unpack_from(buf, pos)", f"    pos += {width}",
             f"    if pos + {size} > end: raise Corrupt('{what} is truncated')"]
    if kind is Kind.TEXT:
        lines.append(f"    {target} = str(buf[pos:pos + n], 'utf-8')")
    elif kind is Kind.BLOB:
        lines.append(f"    {target} = bytes(buf[pos:pos + n])")
    else:
        lines.append(f"    {target} = unpack_from(f'>{{n}}I', buf, pos)")
    return [*lines, f"    pos += {size}"]
