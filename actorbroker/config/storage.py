"""Configuration layer: the [storage] and [retry] sections. Imports the stdlib and actorbroker.errors only.

Declared here rather than in :mod:`.schema` to keep that module small;
:mod:`.schema` lists them in ``SECTIONS`` and ``Config`` like the others.
How the commit log works: docs/storage.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import check_section
from .options import option

__all__ = ["RetryConfig", "StorageConfig"]


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """The commit log in data_dir/log: durability, segments, retention (docs/storage.md)."""

    durability: str = option(
        "fsync", choices=("fsync", "os", "memory"),
        help="""When a QoS 1/2 PUBLISH counts as stored, and so when PUBACK/PUBREC
        goes out: "fsync" after the log is flushed to disk, one fsync per group of
        publishes; "os" once the OS has the bytes (lost on power failure, not on a
        broker crash); "memory" never written (lost on any restart).""",
    )
    group_commit_interval: float = option(
        2.0, minimum=0, maximum=1000, unit="milliseconds",
        help="""Longest wait to gather publishes into one fsync (longer: fewer fsyncs, later acks).""",
    )
    segment_bytes: int = option(
        64 * 1024 * 1024, minimum=1024 * 1024, maximum=1024 * 1024 * 1024, unit="bytes",
        help="""Size at which a log file is closed and the next begun; retention
        deletes whole files.""",
    )
    retention_hours: float = option(
        168.0, minimum=0, zero="no time limit", unit="hours",
        help="""Log files older than this are deleted once no session needs them
        (the data pipeline reads this history).""",
    )
    retention_bytes: int = option(
        1024 * 1024 * 1024, minimum=0, zero="no size limit", unit="bytes",
        help="""Size above which the oldest log files are deleted, once no session
        needs them, even if younger than retention_hours.""",
    )
    max_disk_bytes: int = option(
        0, minimum=0, zero="unlimited", unit="bytes",
        values="0 (unlimited) or at least 2097152 (2 MiB) bytes",
        extra=lambda v: None if v == 0 or v >= 2 << 20 else f"must be 0 or at least 2097152, not {v}",
        help="""Hard bound on the log's size. At the bound, when sessions still need
        every file, QoS 1/2 publishes are refused (0x97, Quota exceeded) as on a
        full disk; QoS 0 flows on. Below twice segment_bytes, files are made smaller.""",
    )

    durable_queue_bytes: int = option(
        256 * 1024 * 1024, minimum=0, zero="unlimited", unit="bytes",
        help="""Payload bytes of the QoS 1/2 messages queued for one durable session
        (a persistent one, on a node whose durability is "fsync" or "os") while it
        is offline, or past [limits] max_queued_messages while it is stuck.
        Its queue is offsets into the log, which holds each message once for every
        session anyway (17 bytes of memory per message queued), so it is bounded
        by what it keeps on disk rather than by [limits] max_queued_messages: a
        durable subscriber that is away for a while gets everything sent
        meanwhile. The default lets one session keep a quarter of the default
        retention_bytes from being deleted; beyond it the new message is dropped
        for that session (queue_full).""",
    )

    log_qos0: bool = option(
        False,
        help="""Whether QoS 0 PUBLISHes (and QoS 0 Wills) are logged too, so that
        the data pipeline sees all traffic. Nothing waits for their records: the
        message is routed at once, never held for a write or an fsync; it is still
        never queued for an offline session nor redelivered after a crash (QoS 0
        is at most once). Off by default: QoS 0 is the high-rate path, and logging
        it puts every message on disk (73 bytes for a 16-byte one) and costs broker
        CPU, 5-10 us a message under load and more at low rates, where each one
        is its own write (docs/benchmarks.md, "log_qos0").""",
    )
    checkpoint_bytes: int = option(
        8 * 1024 * 1024, minimum=0, zero="segment_bytes", unit="bytes",
        help="""Log growth after which the durable state (sessions, queues as log
        offsets, retained messages) is restated in the log as a checkpoint, so
        that a restart replays from there and retention can delete older files.
        A checkpoint also waits for the log to grow twice its own size.""",
    )
    checkpoint_interval: float = option(
        300.0, above=0, unit="seconds",
        help="""Longest time between two checkpoints while the log grows.""",
    )
    snapshots: bool = option(
        True,
        help="""Whether a snapshot of the durable state (dill, HMAC-SHA256 signed with
        data_dir/snapshot.key, mode 0600) is written at each checkpoint and at
        shutdown, for a faster restart. A snapshot that does not verify, or is
        from another version, is ignored with a warning and the log replayed.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "storage")


@dataclass(frozen=True, slots=True)
class RetryConfig:
    """Retries with exponential backoff and jitter: the n-th waits
    min(cap, base x factor^n) seconds, +/- jitter of it."""

    mqtt3_in_session: bool = option(
        True,
        help="""Whether unacknowledged QoS 1/2 PUBLISHes (with DUP set) and PUBRELs
        are sent again to an MQTT 3.1/3.1.1 client while it stays connected.
        MQTT 5 forbids it: there they are sent again on reconnect only
        [MQTT-4.4.0-1], as for 3.x clients when this is false.""",
    )
    base: float = option(
        20.0, above=0, unit="seconds",
        help="""Wait before the first retransmission to an MQTT 3.x client (Mosquitto
        1.x's retry_interval was 20 s).""",
    )
    factor: float = option(
        2.0, minimum=1, help="""Growth of the wait after each retry without progress.""",
    )
    cap: float = option(
        300.0, above=0, unit="seconds", help="""Longest wait between two retries.""",
    )
    jitter: float = option(
        0.2, minimum=0, maximum=0.9,
        help="""Fraction of each wait drawn at random (+/-), so that many sessions
        do not retry in step.""",
    )
    internal_base: float = option(
        0.1, above=0, unit="seconds",
        help="""First wait of the broker's own retries (probing a full disk, storing
        journal records again), with the same factor and jitter, capped at 10 s.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "retry")
