"""Pipeline layer: the operators' tables, as Spark DataFrame transformations. Imports pyspark and actorbroker.persistence.records only.

Every table is a *fold*: :func:`fold` takes the records of one read (a
``records=all`` DataFrame: messages and session events) and the tables of
the previous fold (None for the first), and returns the new tables. The
batch report folds the whole log once; the stream folds each micro-batch
into the previous version, so both give the same tables (a test checks it).

Published tables (docs/pipeline.md has their columns):

* ``topic_stats``: per minute window and topic: messages, bytes, distinct
  publishers;
* ``client_stats``: per publisher: messages, bytes, distinct topics, QoS mix,
  first and last publish;
* ``latest_values``: per topic, the last message (payload, time, QoS, ...);
* ``sessions``: per client: connects, reconnects, disconnects by reason,
  online time, longest offline gap, state now;
* ``online_clients``: per minute with a change: clients online at its end,
  connects, disconnects.

A fold needs nothing but the previous tables: distinct counts keep their
sets (``publisher_ids``, ``topic_names``), online time its open interval
(``online_since`` and ``as_of``). Durations are seconds.
Session rules, per client in log order: a ``connected`` starts online time
(a second ``connected`` without ``disconnected`` between, e.g. a broker
crash, closes the first interval and starts another); a ``disconnected``
after a ``connected`` ends it; the gap from a ``disconnected`` to the next
``connected`` is offline time. Online time runs up to ``as_of`` (the newest
record read, or ``--until``) for clients still online.

No count of messages queued for offline sessions: the log does not say
which ones were. The broker derives an offline session's queue from its
subscriptions when it folds each ``PublishAccepted`` (actorbroker/durable/fold.py);
``SessionQueued`` records only restate a queue when a session hibernates.
A count from those records read 0 for sessions that had messages queued.

:func:`online_changes` gives the same online/offline transitions at their
own times (the report's chart buckets them by the span, see report.py).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from actorbroker.persistence.records import DisconnectCause

__all__ = ["COLUMNS", "PUBLISHED", "fold", "online_changes"]

PUBLISHED = ("topic_stats", "client_stats", "latest_values", "sessions", "online_clients")
#: The columns of ``records=all`` that :func:`fold` reads (the data source's ``columns`` option).
COLUMNS = ("offset", "timestamp", "event", "client_id", "topic", "qos", "retain", "payload",
           "payload_size", "cause")
_CONN = ("connected", "disconnected")


def _seconds(later: Column, earlier: Column) -> Column:
    return (F.unix_micros(later) - F.unix_micros(earlier)) / F.lit(1e6)


def fold(records: DataFrame, previous: dict[str, DataFrame] | None,
         as_of: Column | None = None) -> dict[str, DataFrame]:
    """The tables after folding ``records`` into ``previous`` (see the module doc).

    ``as_of``: a timestamp literal; by default the newest record's time (at
    least the previous ``as_of``).
    """
    messages = records.filter(F.col("event") == "publish").select(
        "offset", "timestamp", "topic", "client_id", "qos", "retain", "payload", "payload_size")
    events = records.filter(F.col("event") != "publish").select(
        "offset", "timestamp", "event", "client_id", "cause")
    if as_of is None:
        newest = records.agg(F.max("timestamp")).first()
        as_of = F.lit(newest[0] if newest else None).cast("timestamp")
        if previous is not None:
            as_of = F.greatest(as_of, F.lit(_previous_as_of(previous)).cast("timestamp"))
    tables = {"topic_stats": _topic_stats(messages, previous),
              "client_stats": _client_stats(messages, previous),
              "latest_values": _latest_values(messages, previous)}
    sessions, transitions = _sessions(events, previous, as_of)
    tables["sessions"] = sessions
    tables["online_clients"] = _online_clients(transitions, previous)
    return tables


def _previous_as_of(previous: dict[str, DataFrame]) -> object:
    row = previous["sessions"].agg(F.max("as_of")).first()
    return None if row is None else row[0]


def _topic_stats(messages: DataFrame, previous: dict[str, DataFrame] | None) -> DataFrame:
    minute = F.date_trunc("minute", "timestamp").alias("window_start")
    stats = messages.groupBy(minute, "topic").agg(
        F.count(F.lit(1)).alias("messages"), F.sum("payload_size").cast("long").alias("bytes"),
        F.collect_set("client_id").alias("publisher_ids"))
    if previous is not None:
        old = previous["topic_stats"].select("window_start", "topic", "messages", "bytes",
                                             "publisher_ids")
        stats = stats.unionByName(old).groupBy("window_start", "topic").agg(
            F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
            F.array_distinct(F.flatten(F.collect_list("publisher_ids"))).alias("publisher_ids"))
    ids = F.array_sort("publisher_ids")
    return stats.select(
        "window_start", (F.col("window_start") + F.expr("INTERVAL 1 MINUTE")).alias("window_end"),
        "topic", "messages", "bytes", F.size(ids).alias("publishers"), ids.alias("publisher_ids"))


def _client_stats(messages: DataFrame, previous: dict[str, DataFrame] | None) -> DataFrame:
    counters = ("messages", "bytes", "qos0", "qos1", "qos2", "retained")
    stats = messages.groupBy("client_id").agg(
        F.count(F.lit(1)).alias("messages"), F.sum("payload_size").cast("long").alias("bytes"),
        *(F.sum((F.col("qos") == q).cast("long")).alias(f"qos{q}") for q in (0, 1, 2)),
        F.sum(F.col("retain").cast("long")).alias("retained"),
        F.min("timestamp").alias("first_publish"), F.max("timestamp").alias("last_publish"),
        F.collect_set("topic").alias("topic_names"))
    if previous is not None:
        old = previous["client_stats"].select("client_id", *counters, "first_publish",
                                              "last_publish", "topic_names")
        stats = stats.unionByName(old).groupBy("client_id").agg(
            *(F.sum(c).alias(c) for c in counters),
            F.min("first_publish").alias("first_publish"),
            F.max("last_publish").alias("last_publish"),
            F.array_distinct(F.flatten(F.collect_list("topic_names"))).alias("topic_names"))
    names = F.array_sort("topic_names")
    return stats.select("client_id", *counters[:2], F.size(names).alias("topics"), *counters[2:],
                        "first_publish", "last_publish", names.alias("topic_names"))


def _latest_values(messages: DataFrame, previous: dict[str, DataFrame] | None) -> DataFrame:
    columns = ["topic", "timestamp", "offset", "client_id", "qos", "retain", "payload_size",
               "payload"]
    rows = messages.select(*columns)
    if previous is not None:
        rows = rows.unionByName(previous["latest_values"].select(*columns))
    latest = rows.groupBy("topic").agg(
        F.max_by(F.struct(*columns[1:]), "offset").alias("last"))
    return latest.select("topic", *(F.col(f"last.{c}").alias(c) for c in columns[1:]))


def online_changes(records: DataFrame) -> DataFrame:
    """``timestamp``, ``offset``, ``delta``: +1 when a client comes online, -1 when it goes
    offline, by the session rules of the module doc (a fold from nothing)."""
    events = records.filter(F.col("event").isin(*_CONN)).select(
        "offset", "timestamp", "event", "client_id", "cause")
    return _transitions(_flow(events, None)).select("timestamp", "offset", "delta")


def _flow(events: DataFrame, previous: dict[str, DataFrame] | None) -> DataFrame:
    """``events`` with each client's previous connection event (``prev``, ``prev_time``)."""
    flow = events.select("client_id", "offset", "timestamp", "event", "cause",
                         F.lit(False).alias("seed"))
    if previous is not None:  # each client's last connection event, as a seed row
        seeds = previous["sessions"].filter(F.col("online_since").isNotNull()
                                            | F.col("offline_since").isNotNull()).select(
            "client_id", F.lit(-1).cast("long").alias("offset"),
            F.coalesce("online_since", "offline_since").alias("timestamp"),
            F.when(F.col("online"), "connected").otherwise("disconnected").alias("event"),
            F.lit(None).cast("string").alias("cause"), F.lit(True).alias("seed"))
        flow = flow.unionByName(seeds)
    before = Window.partitionBy("client_id").orderBy("offset").rowsBetween(
        Window.unboundedPreceding, -1)
    conn = F.when(F.col("event").isin(*_CONN), F.col("event"))
    return flow.select(
        "*", F.last(conn, ignorenulls=True).over(before).alias("prev"),
        F.last(F.when(conn.isNotNull(), F.col("timestamp")), ignorenulls=True).over(before)
        .alias("prev_time")).filter(~F.col("seed"))


def _transitions(flow: DataFrame) -> DataFrame:
    """The rows of ``flow`` that change a client's online state, with ``delta`` +1 or -1."""
    connected, disconnected = F.col("event") == "connected", F.col("event") == "disconnected"
    was_on = F.col("prev") == "connected"
    changes = flow.filter((connected & ~F.coalesce(was_on, F.lit(False))) | (disconnected & was_on))
    return changes.select("*", F.when(connected, 1).otherwise(-1).alias("delta"))


def _sessions(events: DataFrame, previous: dict[str, DataFrame] | None,
              as_of: Column) -> tuple[DataFrame, DataFrame]:
    """The sessions table and the online/offline transitions (for online_clients)."""
    flow = _flow(events, previous)
    conn = F.when(F.col("event").isin(*_CONN), F.col("event"))
    connected, disconnected = F.col("event") == "connected", F.col("event") == "disconnected"
    was_on, was_off = F.col("prev") == "connected", F.col("prev") == "disconnected"
    span = _seconds(F.col("timestamp"), F.col("prev_time"))
    causes = [c.name.lower() for c in DisconnectCause]
    by_cause = [F.sum((disconnected & (F.col("cause") == c)).cast("long")) for c in causes]
    other = F.sum((disconnected & ~F.coalesce(F.col("cause").isin(*causes), F.lit(False)))
                  .cast("long"))
    batch = flow.groupBy("client_id").agg(
        F.sum(connected.cast("long")).alias("connects"),
        F.sum((connected & F.col("prev").isNotNull()).cast("long")).alias("reconnects"),
        F.sum(disconnected.cast("long")).alias("disconnects"),
        F.sum(F.when((connected | disconnected) & was_on, span).otherwise(0.0)).alias("closed"),
        F.max(F.when(connected & was_off, span)).alias("longest_gap"),
        F.max_by(F.struct(F.col("event").alias("event"), F.col("timestamp").alias("at")),
                 F.when(conn.isNotNull(), F.col("offset"))).alias("last"),
        F.map_filter(F.map_from_arrays(F.array(*map(F.lit, causes + ["other"])),
                                       F.array(*by_cause, other)),
                     lambda _, count: count > 0).alias("by_reason"),
        F.min("timestamp").alias("first"), F.max("timestamp").alias("latest"))
    transitions = _transitions(flow).select("timestamp", "delta")
    return _merge_sessions(batch, previous, as_of), transitions


def _merge_sessions(batch: DataFrame, previous: dict[str, DataFrame] | None,
                    as_of: Column) -> DataFrame:
    empty = F.create_map().cast("map<string,bigint>")
    if previous is None:
        old = batch.sparkSession.createDataFrame([], "client_id string").select(
            "client_id", *(F.lit(None).cast(t).alias(n) for n, t in (
                ("p_connects", "long"), ("p_reconnects", "long"), ("p_disconnects", "long"),
                ("p_closed", "double"), ("p_longest", "double"),
                ("p_reasons", "map<string,bigint>"), ("p_event", "string"),
                ("p_at", "timestamp"), ("p_first", "timestamp"), ("p_latest", "timestamp"))))
    else:
        p = previous["sessions"]
        open_part = F.when(F.col("online"), _seconds(F.col("as_of"), F.col("online_since")))
        old = p.select(
            "client_id", F.col("connects").alias("p_connects"),
            F.col("reconnects").alias("p_reconnects"), F.col("disconnects").alias("p_disconnects"),
            (F.col("online_seconds") - F.coalesce(open_part, F.lit(0.0))).alias("p_closed"),
            F.col("longest_offline_seconds").alias("p_longest"),
            F.col("disconnects_by_reason").alias("p_reasons"),
            F.when(F.col("online"), "connected").when(F.col("offline_since").isNotNull(),
                                                      "disconnected").alias("p_event"),
            F.coalesce("online_since", "offline_since").alias("p_at"),
            F.col("first_seen").alias("p_first"), F.col("last_seen").alias("p_latest"))
    both = batch.join(old, "client_id", "full_outer")
    event = F.coalesce(F.col("last.event"), F.col("p_event"))
    at = F.when(F.col("last.event").isNotNull(), F.col("last.at")).otherwise(F.col("p_at"))
    online = F.coalesce(event == "connected", F.lit(False))
    closed = F.coalesce("p_closed", F.lit(0.0)) + F.coalesce("closed", F.lit(0.0))

    def total(name: str, old_name: str) -> Column:
        return (F.coalesce(name, F.lit(0)) + F.coalesce(old_name, F.lit(0))).cast("long")

    merged = both.select(
        "client_id", total("connects", "p_connects").alias("connects"),
        total("reconnects", "p_reconnects").alias("reconnects"),
        total("disconnects", "p_disconnects").alias("disconnects"),
        F.map_zip_with(F.coalesce("p_reasons", empty), F.coalesce("by_reason", empty),
                       lambda _, a, b: F.coalesce(a, F.lit(0)) + F.coalesce(b, F.lit(0))
                       ).alias("disconnects_by_reason"),
        (closed + F.when(online, _seconds(as_of, at)).otherwise(0.0)).alias("online_seconds"),
        F.greatest("p_longest", "longest_gap").alias("longest_offline_seconds"),
        online.alias("online"),
        F.when(online, at).alias("online_since"),
        F.when(event == "disconnected", at).alias("offline_since"),
        F.least("p_first", "first").alias("first_seen"),
        F.greatest("p_latest", "latest").alias("last_seen"),
        as_of.alias("as_of"))
    return merged


def _online_clients(transitions: DataFrame, previous: dict[str, DataFrame] | None) -> DataFrame:
    minute = F.date_trunc("minute", "timestamp").alias("minute")
    per_minute = transitions.groupBy(minute).agg(
        F.sum("delta").alias("delta"),
        F.sum((F.col("delta") > 0).cast("long")).alias("connects"),
        F.sum((F.col("delta") < 0).cast("long")).alias("disconnects"))
    base = F.lit(0).cast("long")
    if previous is not None:
        last = previous["online_clients"].orderBy(F.col("minute").desc()).limit(1)
        row = last.select("online").first()
        base = F.lit(row[0] if row else 0).cast("long")
    running = Window.orderBy("minute").rowsBetween(Window.unboundedPreceding, 0)
    fresh = per_minute.select("minute", (base + F.sum("delta").over(running)).alias("online"),
                              "connects", "disconnects")
    if previous is None:
        return fresh
    old = previous["online_clients"].select(
        "minute", F.col("online").alias("p_online"), F.col("connects").alias("p_connects"),
        F.col("disconnects").alias("p_disconnects"))
    both = fresh.join(old, "minute", "full_outer")
    return both.select(
        "minute", F.coalesce("online", "p_online").alias("online"),
        (F.coalesce("connects", F.lit(0)) + F.coalesce("p_connects", F.lit(0))).alias("connects"),
        (F.coalesce("disconnects", F.lit(0)) + F.coalesce("p_disconnects", F.lit(0)))
        .alias("disconnects"))
