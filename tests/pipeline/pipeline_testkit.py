"""Logs for the pipeline tests: a hand-checked scenario with its expected tables, and bulk logs.

The scenario (times in seconds after ``T0``, a minute boundary):

    0 dev-1 connected          5 dev-2 connected        10 dev-1 home/temp "20" qos1
   20 dev-2 home/temp "21" q0 30 dev-1 home/hum "40%" qos1 retain
   40 dev-2 disconnected (connection_lost)   45, 50 queued for dev-2
   65 dev-1 home/temp "22" qos2   70 dev-2 connected   80 dev-2 subscribed home/# qos1
   90 dev-2 disconnected (client_disconnect)   100 dev-3 connected
  110 dev-1 disconnected (keepalive_timeout)   130 dev-1 connected
  150 dev-3 office/co2 "415" qos1   170 dev-2 connected   180 dev-1 home/temp "23.5" qos1

plus records every reader must leave out: a checkpoint (restated records of a
dev-9 that never happened) and a record of a type this code does not know.
:data:`EXPECTED` holds the tables worked out by hand from the list above.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import (
    CheckpointCompleted,
    CheckpointStarted,
    DisconnectCause,
    PublishAccepted,
    Record,
    SessionConnected,
    SessionDisconnected,
    SessionQueued,
    Subscribed,
    UnknownRecord,
)

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
_T0_US = int(T0.timestamp() * 1_000_000)


def at(seconds: float) -> int:
    """timestamp_us of ``seconds`` after T0."""
    return _T0_US + int(seconds * 1_000_000)


def when(seconds: float) -> dt.datetime:
    """The naive UTC datetime Spark returns for ``seconds`` after T0 (session time zone UTC)."""
    return (T0 + dt.timedelta(seconds=seconds)).replace(tzinfo=None)


def _pub(s: float, client: str, topic: str, payload: bytes, qos: int, retain: bool = False) -> PublishAccepted:
    return PublishAccepted(topic, payload, qos=qos, retain=retain, client_id=client,
                   packet_id=0 if qos == 0 else int(s) + 1, timestamp_us=at(s))


def _gone(s: float, client: str, cause: DisconnectCause) -> SessionDisconnected:
    return SessionDisconnected(client, cause=cause, expiry_interval=3600, timestamp_us=at(s))


def scenario() -> list[Record]:
    """The scenario's records in log order (see the module docstring)."""
    noise: list[Record] = [
        CheckpointStarted(1, timestamp_us=at(1)),
        SessionConnected("dev-9", restated=True, timestamp_us=at(1)),
        PublishAccepted("ghost/topic", b"", qos=2, client_id="dev-9", packet_id=7, restated=True,
                timestamp_us=at(1)),
        CheckpointCompleted(1, 0, timestamp_us=at(1)),
        UnknownRecord(99, 1, b"from a newer broker", timestamp_us=at(2)),
    ]
    return [
        SessionConnected("dev-1", keep_alive=30, timestamp_us=at(0)),
        *noise[:4],
        SessionConnected("dev-2", protocol_level=5, timestamp_us=at(5)),
        _pub(10, "dev-1", "home/temp", b"20", 1),
        noise[4],
        _pub(20, "dev-2", "home/temp", b"21", 0),
        _pub(30, "dev-1", "home/hum", b"40%", 1, retain=True),
        _gone(40, "dev-2", DisconnectCause.CONNECTION_LOST),
        SessionQueued("dev-2", 0, qos=1, timestamp_us=at(45)),
        SessionQueued("dev-2", 0, qos=1, timestamp_us=at(50)),
        _pub(65, "dev-1", "home/temp", b"22", 2),
        SessionConnected("dev-2", clean_start=False, session_present=True, timestamp_us=at(70)),
        Subscribed("dev-2", "home/#", options=1, timestamp_us=at(80)),
        _gone(90, "dev-2", DisconnectCause.CLIENT_DISCONNECT),
        SessionConnected("dev-3", timestamp_us=at(100)),
        _gone(110, "dev-1", DisconnectCause.KEEPALIVE_TIMEOUT),
        SessionConnected("dev-1", timestamp_us=at(130)),
        _pub(150, "dev-3", "office/co2", b"415", 1),
        SessionConnected("dev-2", clean_start=False, timestamp_us=at(170)),
        _pub(180, "dev-1", "home/temp", b"23.5", 1),
    ]


#: Rows the readers return for the scenario (the noise left out).
SCENARIO_MESSAGES = 6
SCENARIO_EVENTS = 12

EXPECTED = {
    "topic_stats": {  # (window_start, topic) -> (messages, bytes, publishers)
        (when(0), "home/temp"): (2, 4, 2),
        (when(0), "home/hum"): (1, 3, 1),
        (when(60), "home/temp"): (1, 2, 1),
        (when(120), "office/co2"): (1, 3, 1),
        (when(180), "home/temp"): (1, 4, 1),
    },
    "client_stats": {  # client -> (messages, bytes, topics, qos0, qos1, qos2, retained)
        "dev-1": (4, 11, 2, 0, 3, 1, 1),
        "dev-2": (1, 2, 1, 1, 0, 0, 0),
        "dev-3": (1, 3, 1, 0, 1, 0, 0),
    },
    "latest_values": {  # topic -> (payload, timestamp, qos, client, retain)
        "home/temp": (b"23.5", when(180), 1, "dev-1", False),
        "home/hum": (b"40%", when(30), 1, "dev-1", True),
        "office/co2": (b"415", when(150), 1, "dev-3", False),
    },
    "sessions": {  # client -> (connects, reconnects, disconnects, by reason, online s,
        #                      longest offline s, online, online_since)
        "dev-1": (2, 1, 1, {"keepalive_timeout": 1}, 160.0, 20.0, True, when(130)),
        "dev-2": (3, 2, 2, {"connection_lost": 1, "client_disconnect": 1}, 65.0, 80.0, True,
                  when(170)),
        "dev-3": (1, 0, 0, {}, 80.0, None, True, when(100)),
    },
    "online_clients": {  # minute -> (online at its end, connects, disconnects)
        when(0): (1, 2, 1),
        when(60): (1, 2, 2),
        when(120): (3, 2, 0),
    },
}


def write_log(data_dir: Path, records: Iterable[Record], *, segment_bytes: int = 64 << 20,
              batch: int = 1000) -> Path:
    """Append ``records`` to the commit log of ``data_dir`` (DATA_DIR/log) and sync; the log dir."""
    log_dir = data_dir / "log"
    with CommitLog(log_dir, mode="os", segment_bytes=segment_bytes) as log:
        pending: list[Record] = []
        for record in records:
            pending.append(record)
            if len(pending) >= batch:
                log.append(pending)
                log.sync()
                pending = []
        if pending:
            log.append(pending)
            log.sync()
    return log_dir


def publishes(count: int, *, start: int = 0, payload: bytes = b"p" * 100, topics: int = 10,
              clients: int = 5) -> list[PublishAccepted]:
    """``count`` QoS 1 PublishAccepted records, one per second from ``start`` seconds after T0."""
    return [PublishAccepted(f"bulk/{i % topics}", payload, qos=1, client_id=f"bulk-{i % clients}",
                    packet_id=i % 65535 + 1, timestamp_us=at(start + i))
            for i in range(start, start + count)]


def segment_files(log_dir: Path) -> list[Path]:
    return sorted(log_dir.glob("*.log"))


def tear_tail(log_dir: Path, garbage: bytes = b"\x00\x00\x01\x00\xde\xad\xbe\xef partial") -> None:
    """Append the start of a frame that was never completed to the last segment, past the
    committed offset (what a crash between write and fsync leaves)."""
    with open(segment_files(log_dir)[-1], "ab") as handle:
        handle.write(garbage)


def rows_by(rows: Sequence[object], *keys: str) -> dict[object, object]:
    """Rows (Spark Row objects) keyed by one column or a tuple of columns."""
    out = {}
    for row in rows:
        key = tuple(getattr(row, k) for k in keys)
        out[key[0] if len(keys) == 1 else key] = row
    return out


def file_size(path: Path) -> int:
    return os.stat(path).st_size


def _naive(value: object) -> object:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def check_tables(tables: dict[str, list[dict[str, object]]]) -> None:
    """Assert that ``tables`` (table name -> rows as dicts) are the scenario's EXPECTED tables."""
    rows = {name: [{k: _naive(v) for k, v in r.items()} for r in found]
            for name, found in tables.items()}
    topic = {(r["window_start"], r["topic"]): (r["messages"], r["bytes"], r["publishers"])
             for r in rows["topic_stats"]}
    assert topic == EXPECTED["topic_stats"]
    assert all(r["window_end"] - r["window_start"] == dt.timedelta(minutes=1)
               for r in rows["topic_stats"])
    clients = {r["client_id"]: (r["messages"], r["bytes"], r["topics"], r["qos0"], r["qos1"],
                                r["qos2"], r["retained"]) for r in rows["client_stats"]}
    assert clients == EXPECTED["client_stats"]
    latest = {r["topic"]: (bytes(r["payload"]), r["timestamp"], r["qos"], r["client_id"],
                           r["retain"]) for r in rows["latest_values"]}
    assert latest == EXPECTED["latest_values"]
    sessions = {r["client_id"]: (r["connects"], r["reconnects"], r["disconnects"],
                                 dict(r["disconnects_by_reason"] or {}), r["online_seconds"],
                                 r["longest_offline_seconds"], r["online"], r["online_since"])
                for r in rows["sessions"]}
    assert sessions == EXPECTED["sessions"]
    # Dropped: the log does not say which messages were queued offline (aggregates.py).
    assert "messages_queued_offline" not in rows["sessions"][0]
    assert {r["as_of"] for r in rows["sessions"]} == {when(180)}
    online = {r["minute"]: (r["online"], r["connects"], r["disconnects"])
              for r in rows["online_clients"]}
    assert online == EXPECTED["online_clients"]


def colored_pixels(png: Path) -> tuple[int, float]:
    """(pixels drawn in colour, the share of the image's width they spread over) of a chart.

    Axes, ticks and text are black or grey and the background white, so
    coloured pixels are the data's lines, steps, fills and bars: none means
    an empty plot, a narrow spread a point lost on a too wide axis.
    """
    from matplotlib.image import imread

    rgb = imread(str(png))[:, :, :3]
    colour = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.2
    columns = colour.any(axis=0).nonzero()[0]
    if not len(columns):
        return 0, 0.0
    return int(colour.sum()), float(columns[-1] - columns[0] + 1) / rgb.shape[1]
