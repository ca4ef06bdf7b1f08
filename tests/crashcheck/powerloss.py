"""Crash checker: power loss, simulated. Stdlib only (shim.py imports it as a plain module).

kill -9 loses nothing the kernel has: written bytes survive in the page
cache. A power failure loses what was not fsynced. To test that, the broker
runs under shim.py, which calls :func:`install`: every ``os.fsync`` and
``os.fdatasync`` of a regular file appends to a side file (one JSON line)
the file's path and the size it had *before* the sync (bytes written during
the sync may or may not be covered, so they are not counted; each sync is
made SYNC_DELAY slower, as on a busy disk), with its
content when it is small (files rewritten in place, e.g. log/committed);
``os.replace``/``os.rename`` append the move, so a synced temporary file
renamed into place counts under its new name. Before the next start,
:func:`cut` takes every file of the data directory back to its last synced
state: appended files are truncated to the synced size, small files get
their synced content back, files never synced are deleted. Directory
entries are not modelled: a synced file keeps its name even if its
directory was not fsynced (the broker fsyncs it anyway when it creates a
segment).
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any, Callable

SYNC_LOG_ENV = "CRASHCHECK_SYNC_LOG"
# A slow disk: each sync takes this much longer, so that a kill often lands between a
# write and its sync (on a quiet disk fdatasync takes ~0.2 ms and the window is tiny).
SYNC_DELAY = 0.01
SMALL = 4096  # files up to this size are recorded whole (rewritten in place)

Files = dict[str, tuple[int, str | None]]  # absolute path -> (size, hex content if small)


def install(sync_log: str) -> None:
    """Wrap the os functions of this process (see the module doc)."""
    fd = os.open(sync_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    lock = threading.Lock()

    def record(entry: dict[str, Any]) -> None:
        # One write per line on an O_APPEND descriptor: whole lines even if the broker is
        # killed; written before the sync call returns, so before anything it acknowledges.
        with lock:
            os.write(fd, (json.dumps(entry) + "\n").encode())

    def synced(real: Callable[[Any], None]) -> Callable[[Any], None]:
        def sync(target: Any) -> None:
            info = os.fstat(target)
            path = size = content = None
            if stat.S_ISREG(info.st_mode):
                path, size = os.readlink(f"/proc/self/fd/{target}"), info.st_size
                content = _read_small(path, size)
            time.sleep(SYNC_DELAY)
            real(target)
            if path is not None:
                record({"op": "sync", "path": path, "size": size, "content": content})
        return sync

    def moved(real: Callable[..., None]) -> Callable[..., None]:
        def move(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            real(src, dst, *args, **kwargs)
            record({"op": "move", "src": os.path.realpath(src), "dst": os.path.realpath(dst)})
        return move

    # The broker calls them as os.fsync(...) etc., so replacing the module's attributes is enough.
    for name, wrap in (("fsync", synced), ("fdatasync", synced), ("replace", moved),
                       ("rename", moved)):
        setattr(os, name, wrap(getattr(os, name)))


def _read_small(path: str, size: int) -> str | None:
    if size > SMALL:
        return None
    with open(path, "rb") as f:
        return f.read(size).hex()


def files_of(data: Path) -> Files:
    """The state of every file under ``data`` now (after a cut: all of it counts as synced)."""
    found: Files = {}
    for path in data.rglob("*"):
        if path.is_file():
            real = os.path.realpath(path)
            size = path.stat().st_size
            found[real] = (size, _read_small(real, size))
    return found


def cut(data: Path, baseline: Files, sync_log: Path) -> str:
    """Take the files under ``data`` back to their last synced state (see the module doc);
    ``baseline`` is the state when the broker started. A summary of what was cut."""
    durable = dict(baseline)
    if sync_log.exists():
        for line in sync_log.read_text().splitlines():
            entry = json.loads(line)
            if entry["op"] == "sync":
                durable[entry["path"]] = (entry["size"], entry["content"])
            elif entry["src"] in durable:
                durable[entry["dst"]] = durable.pop(entry["src"])
            else:
                durable.pop(entry["dst"], None)
    truncated = restored = deleted = lost_bytes = 0
    for path in sorted(data.rglob("*")):
        if not path.is_file():
            continue
        real, size = os.path.realpath(path), path.stat().st_size
        if real not in durable:
            path.unlink()
            deleted += 1
            lost_bytes += size
            continue
        keep, content = durable[real]
        if content is not None and bytes.fromhex(content) != path.read_bytes():
            path.write_bytes(bytes.fromhex(content))
            restored += 1
        elif content is None and size > keep:
            os.truncate(path, keep)
            truncated += 1
            lost_bytes += size - keep
    return (f"power loss: {truncated} file(s) cut back, {restored} restored, "
            f"{deleted} deleted, {lost_bytes} bytes lost")
