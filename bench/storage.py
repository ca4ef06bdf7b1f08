"""Benchmark: commit log append + group commit throughput on this machine's disk.

Run with ``python -m bench.storage`` (or ``python bench/storage.py``) from the
project root. Prints figures; asserts nothing.

What it measures, one thread, as the storage actor would run:

* group commit in mode ``fsync``: batches of 1, 10, 100 and 1000 records,
  ``append(batch)`` then ``sync()`` (one fdatasync) per batch: records/s,
  fsyncs/s, MB/s and the sync latency (p50, p99);
* the same at batch 100 in modes ``os`` and ``memory``, for reference;
* encoding alone (record -> frame), reading back (LogReader: scan, CRC,
  decode) and opening the log (recovery scans every segment).

Records are QoS 1 ``PublishAccepted`` records: topic ``devices/42/temperature``,
client id ``device-42``, no properties, ``--payload`` bytes of payload
(16 by default: an 83-byte frame). The log lives in a temporary directory
under ``--dir`` (default: the current directory, i.e. the project's disk).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from actorbroker.persistence import CommitLog, LogReader
from actorbroker.persistence.records import PublishAccepted, encode_record
from actorbroker.persistence.segment import encode_frame


def record(i: int, payload: bytes) -> PublishAccepted:
    return PublishAccepted("devices/42/temperature", payload, qos=1, client_id="device-42",
                   packet_id=i % 65535 + 1, timestamp_us=1_700_000_000_000_000 + i)


def group_commit(
    directory: Path, mode: str, batch: int, seconds: float, payload: bytes
) -> dict[str, float]:
    """Append batches and sync each, for about ``seconds``; figures of the run."""
    shutil.rmtree(directory, ignore_errors=True)
    latencies: list[float] = []
    records = 0
    with CommitLog(directory if mode != "memory" else None, mode=mode) as log:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            log.append([record(records + k, payload) for k in range(batch)])
            before = time.perf_counter()
            log.sync()
            latencies.append(time.perf_counter() - before)
            records += batch
        elapsed = time.perf_counter() - start
        size = log.size_bytes
    latencies.sort()
    return {
        "records/s": records / elapsed,
        "syncs/s": len(latencies) / elapsed,
        "MB/s": size / elapsed / 1e6,
        "p50 ms": statistics.median(latencies) * 1e3,
        "p99 ms": latencies[int(len(latencies) * 0.99)] * 1e3,
    }


def encode_rate(count: int, payload: bytes) -> float:
    records = [record(i, payload) for i in range(count)]
    start = time.perf_counter()
    for rec in records:
        encode_frame(encode_record(rec))
    return count / (time.perf_counter() - start)


def read_and_open(directory: Path, count: int, payload: bytes) -> tuple[float, float, float]:
    """(records/s read by LogReader, seconds to open the log, MB of log)."""
    shutil.rmtree(directory, ignore_errors=True)
    with CommitLog(directory, mode="os") as log:
        for start in range(0, count, 1000):
            log.append([record(i, payload) for i in range(start, min(count, start + 1000))])
        log.sync()
        size = log.size_bytes
    begin = time.perf_counter()
    read = sum(1 for _ in LogReader(directory).read())
    read_rate = read / (time.perf_counter() - begin)
    begin = time.perf_counter()
    CommitLog(directory).close()
    return read_rate, time.perf_counter() - begin, size / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.storage",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--dir", default=".", help="where the temporary log directory goes")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each group-commit run")
    parser.add_argument("--payload", type=int, default=16, help="payload bytes per record")
    parser.add_argument("--records", type=int, default=1_000_000, help="records for the read/open run")
    args = parser.parse_args(argv)
    payload = b"x" * args.payload
    frame = len(encode_frame(encode_record(record(0, payload))))
    work = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        device = os.stat(work).st_dev
        fs = next((line.split()[:3] for line in Path("/proc/mounts").read_text().splitlines()
                   if os.path.exists(line.split()[1]) and os.stat(line.split()[1]).st_dev == device),
                  ["?", "?", "?"])
        print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; log in {work} "
              f"({fs[0]} {fs[2]}); {frame}-byte frames; {args.seconds:g} s per run")
        print(f"{'mode':<7} {'batch':>6} {'records/s':>12} {'syncs/s':>9} {'MB/s':>7} "
              f"{'sync p50 ms':>12} {'sync p99 ms':>12}")
        runs = [("fsync", b) for b in (1, 10, 100, 1000)] + [("os", 100), ("memory", 100)]
        for mode, batch in runs:
            got = group_commit(work / "log", mode, batch, args.seconds, payload)
            print(f"{mode:<7} {batch:>6} {got['records/s']:>12,.0f} {got['syncs/s']:>9,.0f} "
                  f"{got['MB/s']:>7.1f} {got['p50 ms']:>12.3f} {got['p99 ms']:>12.3f}")
        print(f"encode record + frame: {encode_rate(200_000, payload):,.0f} records/s")
        read_rate, open_seconds, megabytes = read_and_open(work / "log", args.records, payload)
        print(f"LogReader scan + CRC + decode: {read_rate:,.0f} records/s; "
              f"opening a {megabytes:.0f} MB log (recovery reads it all): {open_seconds:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
