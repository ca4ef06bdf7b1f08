"""Persistence layer: moving a damaged segment aside while its intact frames stay live. Imports the stdlib and actorbroker.errors only.

A damaged segment is renamed into ``quarantine/`` whole (for forensics, with
a ``.reason`` file), and each run of intact frames it held is written back
as a segment file of its own, named by the offset of its first frame: the
records keep their offsets, and the damaged ranges become gaps between
segments, which every reader skips.

Crash-safe in three steps, with fsyncs in between:

1. every piece is written to a *salvage* file next to the segment and
   fsynced: ``NAME.log.salvage`` for a piece that starts where the segment
   starts, ``NAME.log.salvage.BBBBBBBBBBBBBBBBBBBB`` (its base, 20 digits)
   for the others;
2. the segment is renamed into ``quarantine/``;
3. the salvage files take their names, the one named ``NAME.log`` last.

:func:`finish_salvages`, run at every opening, completes step 3 after a crash
(the segment is gone) or drops the salvage files (the segment is still
there, so step 2 never happened and recovery checks it again). Because
``NAME.log`` reappears only in the last rename, its presence next to a
salvage file always means step 2 did not happen.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from .segment import HEADER, encode_header, parse_segment_name, segment_name

__all__ = ["QUARANTINE_DIR", "finish_salvages", "fsync_dir", "quarantine"]

QUARANTINE_DIR = "quarantine"
_SALVAGE = ".salvage"
_log = logging.getLogger("actorbroker.persistence")


def fsync_dir(path: Path) -> None:
    """Make renames, creations and deletions in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def quarantine(directory: Path, path: Path, fd: int, base: int,
               pieces: list[tuple[int, int]], reason: str) -> Path:
    """Move the segment ``path`` (open as ``fd``) to quarantine/; keep ``pieces`` live.

    ``pieces`` are ``(start, end)`` data positions of intact runs, in order;
    each becomes a segment whose base is ``base + start``. Returns where the
    segment went. On OSError before the segment moved, nothing has changed.
    """
    qdir = directory / QUARANTINE_DIR
    qdir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = qdir / f"{path.name}.{stamp}"
    count = 1
    while target.exists():
        count += 1
        target = qdir / f"{path.name}.{stamp}.{count}"
    salvages = [(_salvage_name(path, start, base), start, end)
                for start, end in pieces]
    try:
        for salvage, start, end in salvages:
            _copy_piece(fd, salvage, base + start, start, end)
        os.rename(path, target)
    except OSError:
        for salvage, _, _ in salvages:
            salvage.unlink(missing_ok=True)  # the segment is untouched
        raise
    try:
        (qdir / (target.name + ".reason")).write_text(reason + "\n")
    except OSError as exc:
        _log.error("cannot write %s.reason: %s", target, exc)
    fsync_dir(qdir)
    for salvage, start, _ in sorted(salvages, key=lambda s: s[1] == 0):  # NAME.log last
        os.rename(salvage, directory / segment_name(base + start))
    fsync_dir(directory)
    return target


def _salvage_name(path: Path, start: int, base: int) -> Path:
    suffix = _SALVAGE if start == 0 else f"{_SALVAGE}.{base + start:020d}"
    return path.with_name(path.name + suffix)


def _copy_piece(fd: int, target: Path, piece_base: int, start: int, end: int) -> None:
    """Write a segment file holding the data bytes ``[start, end)`` of ``fd`` (fsynced)."""
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(out, encode_header(piece_base))
        position = start
        while position < end:
            chunk = os.pread(fd, min(end - position, 1 << 20), HEADER.size + position)
            if not chunk:
                raise OSError(f"segment shorter than expected at data position {position}")
            _write_all(out, chunk)
            position += len(chunk)
        os.fsync(out)
    finally:
        os.close(out)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def finish_salvages(directory: Path) -> None:
    """Complete or drop a quarantine that a crash interrupted (see the module doc)."""
    found = []
    for name in os.listdir(directory):
        stem, sep, rest = name.partition(".log" + _SALVAGE)
        if not sep or parse_segment_name(stem + ".log") is None or not (
                rest == "" or (rest[:1] == "." and rest[1:].isdigit())):
            continue
        target = stem + ".log" if not rest else segment_name(int(rest[1:]))
        found.append((directory / name, directory / (stem + ".log"), directory / target))
    for salvage, original, piece in sorted(found, key=lambda f: f[2] == f[1]):  # NAME.log last
        if original.exists():
            salvage.unlink()  # the segment was not moved yet: it will be checked again
        else:
            os.rename(salvage, piece)
    if found:
        fsync_dir(directory)
