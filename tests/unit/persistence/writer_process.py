"""A commit log writer in its own process, for the cross-process tests (not a test module).

    python writer_process.py DIR MODE SEGMENT_BYTES MAX_RECORDS STOP_FILE

Appends records 0, 1, 2, ... (the ``numbered`` records of conftest.py) in
batches of 1 to 40, syncs after each batch and prints ``synced COUNT`` (the
records acknowledged so far), until MAX_RECORDS are written or STOP_FILE
exists. Prints ``done COUNT`` at the end.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import PublishAccepted


def numbered(i: int, size: int = 40) -> PublishAccepted:
    """The same records as conftest.numbered."""
    return PublishAccepted(f"seq/{i}", (b"%08d" % i) * (size // 8), qos=1, client_id="writer",
                   packet_id=i % 65535 + 1, timestamp_us=1_700_000_000_000_000 + i)


def main(directory: str, mode: str, segment_bytes: str, max_records: str, stop_file: str) -> None:
    rng = random.Random(7)
    stop = Path(stop_file)
    count = 0
    with CommitLog(directory, mode=mode, segment_bytes=int(segment_bytes)) as log:
        while count < int(max_records) and not stop.exists():
            batch = rng.randint(1, 40)
            log.append(numbered(i) for i in range(count, count + batch))
            log.sync()
            count += batch
            print(f"synced {count}", flush=True)
    print(f"done {count}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
