"""Pipeline layer: record bodies to Arrow columns, a chunk of frames at a time. Imports numpy, pyarrow and actorbroker.persistence only.

Decoding record by record (:func:`actorbroker.persistence.records.decode_record`)
costs a few microseconds per record in Python; this module decodes a whole
:class:`~.logscan.Chunk` with numpy instead, driven by the same field
declarations (:func:`actorbroker.persistence.wire.layout`), so it follows
the format without restating it:

* the envelope (type, version, flags, timestamp) of every frame at once;
* for one record type: fixed-size fields gathered big-endian at computed
  positions; variable-size fields walked field by field, every row at once;
* TEXT and BLOB columns without a Python object per value: the chunk's bytes
  become one Arrow binary array whose elements alternate between a field's
  bytes and what lies between two fields, and ``take`` keeps every other
  element (a C++ copy); TEXT is then cast to string, which checks UTF-8.

A row whose body is short, or whose value is out of range or not UTF-8, is
dropped and counted (:attr:`Decoded.bad`), as LogReader skips such records.
Bytes after the known fields are ignored and appended fields missing from
old records take their defaults, as in :mod:`actorbroker.persistence.wire`.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from actorbroker.persistence.records import ENVELOPE, FLAG_RESTATED, Record
from actorbroker.persistence.wire import Kind, layout

from .logscan import Chunk

__all__ = ["Decoded", "Envelopes", "decode"]

_log = logging.getLogger("actorbroker.pipeline")
_WIDTH = {Kind.U8: 1, Kind.U16: 2, Kind.U32: 4, Kind.U64: 8, Kind.I64: 8, Kind.BOOL: 1}
_PREFIX = {Kind.TEXT: 2, Kind.BLOB: 4}


@dataclass(frozen=True, slots=True)
class Envelopes:
    """The envelope of every frame of a chunk, as numpy arrays (one row per frame)."""

    data: np.ndarray  # the chunk's bytes as uint8
    payload: np.ndarray  # position of each payload in ``data``
    end: np.ndarray  # position just after each payload
    type: np.ndarray
    version: np.ndarray
    flags: np.ndarray
    timestamp_us: np.ndarray
    offset: np.ndarray  # log offset of each frame

    @classmethod
    def of(cls, chunk: Chunk) -> Envelopes:
        data = np.frombuffer(chunk.buf, np.uint8)
        payload = chunk.starts + 8
        return cls(
            data, payload, payload + chunk.lengths, data[payload], data[payload + 1],
            _uint(data, payload + 2, 2), _uint(data, payload + 4, 8, signed=True),
            chunk.starts + chunk.offset,
        )

    def rows(self, cls: type[Record], include_restated: bool) -> np.ndarray:
        """Indices of the frames holding records of ``cls`` (restated ones only if asked)."""
        mask = (self.type == cls.TYPE) & (self.version == cls.VERSION)
        if not include_restated:
            mask &= (self.flags & FLAG_RESTATED) == 0
        return np.flatnonzero(mask)


@dataclass(frozen=True, slots=True)
class Decoded:
    """The records of one type in a chunk: ``columns`` by field name (Arrow arrays),
    their log offsets and timestamps (numpy), and how many rows were dropped as damaged."""

    columns: dict[str, pa.Array]
    offset: np.ndarray
    timestamp_us: np.ndarray
    bad: int

    def __len__(self) -> int:
        return len(self.offset)


def decode(chunk: Chunk, cls: type[Record], *, envelopes: Envelopes | None = None,
           include_restated: bool = False, fields: tuple[str, ...] | None = None) -> Decoded:
    """The records of type ``cls`` in ``chunk``, as columns (only ``fields``, if given)."""
    env = envelopes or Envelopes.of(chunk)
    rows = env.rows(cls, include_restated)
    data, end = env.data, env.end[rows]
    pos = env.payload[rows] + ENVELOPE.size
    ok = np.ones(len(rows), bool)
    raw: dict[str, Any] = {}
    order = layout(cls)
    fixed = [(n, s) for n, s in order if s.kind in _WIDTH and not s.appended]
    size = sum(_WIDTH[s.kind] for _, s in fixed)
    ok &= pos + size <= end
    at = np.where(ok, pos, 0)
    for name, spec in fixed:
        raw[name] = _uint(data, at, _WIDTH[spec.kind], signed=spec.kind is Kind.I64)
        at = at + _WIDTH[spec.kind]
    pos = pos + size
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    fallback = env.payload[rows]  # keeps positions in frame order for damaged rows
    for name, spec in order:
        if spec.kind in _WIDTH and not spec.appended:
            continue
        present = pos < end if spec.appended else np.ones(len(rows), bool)
        following, value, fits = _variable(data, pos, end, spec.kind, ok & present, fallback)
        ok &= fits | ~present
        if spec.appended and spec.kind in _WIDTH:
            value = np.where(present, value, defaults[name])
        raw[name] = value
        pos = np.where(present, following, pos)
    for name, spec in order:
        if spec.maximum is not None and isinstance(raw[name], np.ndarray):
            ok &= raw[name] <= spec.maximum
    wanted = [n for n, _ in order if fields is None or n in fields]
    columns: dict[str, pa.Array] = {}
    for name in wanted:
        spec = dict(order)[name]
        value = raw[name]
        if spec.kind in (Kind.TEXT, Kind.BLOB):
            starts, lengths = value
            columns[name] = _binary(chunk.buf, starts, lengths, text=spec.kind is Kind.TEXT)
        elif spec.kind is Kind.BOOL:
            columns[name] = value != 0
        elif spec.kind is not Kind.U32_LIST:
            columns[name] = value
    ok &= _valid_text(columns, order)
    bad = int(len(ok) - np.count_nonzero(ok))
    if bad:
        _log.warning("commit log: %d %s record(s) in [%d, %d) could not be decoded; skipped",
                     bad, cls.__name__, chunk.offset, chunk.offset + len(chunk.buf))
    keep = np.flatnonzero(ok)
    out = {name: _to_arrow(col, keep) for name, col in columns.items()}
    return Decoded(out, env.offset[rows][keep], env.timestamp_us[rows][keep], bad)


def _uint(data: np.ndarray, at: np.ndarray, width: int, *, signed: bool = False) -> np.ndarray:
    """Big-endian integers of ``width`` bytes at positions ``at``, as int64."""
    if width == 1:
        return data[at].astype(np.int64)
    dtype = {2: ">u2", 4: ">u4", 8: ">i8" if signed else ">u8"}[width]
    gathered = data[at[:, None] + np.arange(width)] if len(at) else np.empty((0, width), np.uint8)
    return np.ascontiguousarray(gathered).view(dtype).ravel().astype(np.int64)


def _variable(data: np.ndarray, pos: np.ndarray, end: np.ndarray, kind: Kind, ok: np.ndarray,
              fallback: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray]:
    """Read one variable-size field at ``pos`` in every row: (next pos, value, fits).

    TEXT and BLOB values are (start, length) pairs; a row where the field
    does not fit gets an empty value at ``fallback``.
    """
    if kind is Kind.U32_LIST:
        fits = ok & (pos + 2 <= end)
        count = _uint(data, np.where(fits, pos, 0), 2)
        nxt = pos + 2 + 4 * count
        return nxt, None, fits & (nxt <= end)
    if kind in _WIDTH:  # an appended fixed-size field
        width = _WIDTH[kind]
        fits = ok & (pos + width <= end)
        return pos + width, _uint(data, np.where(fits, pos, 0), width), fits
    prefix = _PREFIX[kind]
    fits = ok & (pos + prefix <= end)
    length = np.where(fits, _uint(data, np.where(fits, pos, 0), prefix), 0)
    start = pos + prefix
    fits &= start + length <= end
    length = np.where(fits, length, 0)
    following = start + length
    return following, (np.where(fits, start, fallback), length), fits


def _binary(buf: bytes, starts: np.ndarray, lengths: np.ndarray, *, text: bool) -> pa.Array:
    """The byte strings ``buf[s:s+n]`` as one Arrow array, copied in C++ (see the module doc)."""
    count = len(starts)
    bounds = np.empty(2 * count + 2, np.int64)
    bounds[0] = 0
    bounds[1:-1:2] = starts
    bounds[2:-1:2] = starts + lengths
    bounds[-1] = len(buf)
    if count and np.any(np.diff(bounds) < 0):  # fields out of order (damaged rows): slow path
        values = [buf[s:s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
        return pa.array(values, pa.large_binary())
    whole = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(bounds) - 1, [None, pa.py_buffer(bounds), pa.py_buffer(buf)])
    picked = whole.take(pa.array(np.arange(1, 2 * count, 2, dtype=np.int64)))
    return picked if not text else _Text(picked)


class _Text:
    """A TEXT column not yet checked for UTF-8 (see :func:`_valid_text`)."""

    __slots__ = ("binary",)

    def __init__(self, binary: pa.Array) -> None:
        self.binary = binary


def _valid_text(columns: dict[str, Any], order: list[tuple[str, Any]]) -> np.ndarray | bool:
    """Cast TEXT columns to strings in place; False for rows holding invalid UTF-8."""
    ok: np.ndarray | bool = True
    for name, value in list(columns.items()):
        if not isinstance(value, _Text):
            continue
        try:
            columns[name] = value.binary.cast(pa.large_string())
        except pa.ArrowInvalid:
            good = np.array([_is_utf8(b) for b in value.binary.to_pylist()], bool)
            ok = ok & good
            fixed = [b if g else b"" for b, g in zip(value.binary.to_pylist(), good, strict=True)]
            columns[name] = pa.array(fixed, pa.large_binary()).cast(pa.large_string())
    return ok


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _to_arrow(column: Any, keep: np.ndarray) -> pa.Array:
    if isinstance(column, np.ndarray):
        return pa.array(column[keep])
    array: pa.Array = column.take(pa.array(keep)) if len(keep) != len(column) else column
    return array
