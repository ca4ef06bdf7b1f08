"""/metrics under a real load: counters move by exactly what the clients did; $SYS agrees."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mqtt_testkit import Client
from ops_testkit import scrape

from actorbroker.app import RunningBroker
from actorbroker.ops.prometheus import METRICS


def _value(samples: dict[tuple[str, ...], float], name: str, *labels: str) -> float:
    return samples.get((name, *labels), 0.0)


def test_counters_move_by_what_the_clients_did_while_a_load_runs(
        ops_broker: Callable[..., RunningBroker]) -> None:
    broker = ops_broker()  # with the commit log (mode fsync)
    url = broker.http_url
    sub = Client(broker.host, broker.port, "metrics-sub")
    pub = Client(broker.host, broker.port, "metrics-pub")
    try:
        assert sub.connect().rc == 0 and pub.connect().rc == 0
        sub.subscribe("load/#", 1)
        before = scrape(url)
        qos1, qos0 = 600, 150

        def load() -> None:
            for i in range(qos1):
                pub.publish(f"load/{i % 7}", b"x" * 100, qos=1)
            for _ in range(qos0):
                pub.publish("load/zero", b"y" * 10, qos=0)

        runner = threading.Thread(target=load)
        runner.start()
        scrapes = []
        while runner.is_alive():  # scrape while the load runs: every counter only grows
            scrapes.append(scrape(url))
        runner.join()
        got = sub.expect_many(qos1 + qos0, timeout=30)
        assert len(got) == qos1 + qos0
        name = "actorbroker_messages_received_total"
        series = [_value(s, name, "qos=1") for s in scrapes]
        assert series == sorted(series) and len(scrapes) >= 2, series

        deadline = time.monotonic() + 5
        while True:  # the last QoS 0 writes are counted as they are written
            after = scrape(url)
            if _value(after, "actorbroker_messages_sent_total", "qos=0") - _value(
                    before, "actorbroker_messages_sent_total", "qos=0") >= qos0:
                break
            assert time.monotonic() < deadline, "QoS 0 deliveries never counted"

        def delta(metric: str, *labels: str) -> float:
            return _value(after, metric, *labels) - _value(before, metric, *labels)

        assert delta("actorbroker_messages_received_total", "qos=1") == qos1
        assert delta("actorbroker_messages_received_total", "qos=0") == qos0
        assert delta("actorbroker_messages_sent_total", "qos=1") == qos1
        assert delta("actorbroker_messages_sent_total", "qos=0") == qos0
        assert delta("actorbroker_bytes_received_total") >= qos1 * 100 + qos0 * 10
        assert _value(after, "actorbroker_connects_total") == 2
        assert _value(after, "actorbroker_sessions", "state=online") == 2
        assert _value(after, "actorbroker_subscriptions") == 1
        listener = f"listener=127.0.0.1:{broker.port}"
        assert _value(after, "actorbroker_connections", listener) == 2
        assert _value(after, "actorbroker_connections_accepted_total", listener) == 2
        # The commit log: every QoS 1 publish was appended and synced (mode fsync).
        assert delta("actorbroker_commitlog_records_total") >= qos1
        assert _value(after, "actorbroker_commitlog_appends_total") > 0
        assert _value(after, "actorbroker_commitlog_sync_seconds_count") > 0
        assert _value(after, "actorbroker_commitlog_segments") >= 1
        assert _value(after, "actorbroker_commitlog_sync_seconds_bucket", "le=+Inf") == \
            _value(after, "actorbroker_commitlog_sync_seconds_count")
        # The tree: one session actor per client, the core's singletons, no restart.
        assert _value(after, "actorbroker_actors", "kind=SessionActor") == 2
        assert _value(after, "actorbroker_actors", "kind=RegistryActor") == 1
        assert _value(after, "actorbroker_supervisor_restarts_total", "supervisor=core") == 0
        assert _value(after, "actorbroker_event_loop_lag_seconds_count") > 0
        assert ("actorbroker_info", "node=test", "version=0.1.0") in after
        # Every metric of the table is exported (those without a sample yet aside).
        names = {key[0] for key in after}
        for metric in METRICS:
            if metric.name.startswith("actorbroker_top_") or "dropped" in metric.name:
                continue  # no sample until a client is busy in a sampled second, or a drop
            sample = metric.name + ("_count" if metric.kind == "histogram" else "")
            assert sample in names, sample
    finally:
        pub.close()
        sub.close()


def test_the_busiest_client_and_topic_have_rank_one_without_a_label_each(
        ops_broker: Callable[..., RunningBroker]) -> None:
    broker = ops_broker(data_dir=None)
    url = broker.http_url
    quiet = Client(broker.host, broker.port, "quiet")
    busy = Client(broker.host, broker.port, "busy")
    try:
        assert quiet.connect().rc == 0 and busy.connect().rc == 0
        quiet.subscribe("chatter", 0)
        quiet.subscribe("whisper", 0)
        busy.publish("whisper", b"once")
        deadline = time.monotonic() + 10
        while True:  # the rates are per second: publish until a sample has seen it
            for _ in range(50):
                busy.publish("chatter", b"z" * 50, qos=1)
            samples = scrape(url)
            if (("actorbroker_top_client_info", "client_id=busy", "rank=1") in samples
                    and ("actorbroker_top_topic_info", "rank=1", "topic=chatter") in samples):
                break
            assert time.monotonic() < deadline, "busy/chatter never ranked first"
        assert _value(samples, "actorbroker_top_client_packets_per_second",
                      "direction=in", "rank=1") > 0
        assert _value(samples, "actorbroker_top_topic_messages_per_second", "rank=1") > 0
        assert not any("client_id=busy" in key for key in samples
                       if key[0] != "actorbroker_top_client_info")
        assert not any("topic=whisper" in key for key in samples)  # one message: not busy
    finally:
        busy.close()
        quiet.close()


def _stored(samples: dict[tuple[str, ...], float]) -> str:
    """What $SYS/broker/store/messages/count must say: retained, queued and in flight."""
    return str(int(_value(samples, "actorbroker_retained_messages")
                   + _value(samples, "actorbroker_queued_messages")
                   + _value(samples, "actorbroker_inflight_messages")))


def test_sys_topics_show_the_same_figures_as_metrics(
        ops_broker: Callable[..., RunningBroker]) -> None:
    broker = ops_broker(data_dir=None, interval=0.2)
    url = broker.http_url
    watcher = Client(broker.host, broker.port, "sys-watcher")
    pub = Client(broker.host, broker.port, "sys-pub")
    try:
        assert watcher.connect().rc == 0 and pub.connect().rc == 0
        pub.subscribe("own/#", 1)
        for _ in range(25):
            pub.publish("own/x", b"12345", qos=1)
        assert len(pub.expect_many(25)) == 25
        # Not $SYS/broker/#: what it delivers to the watcher would move messages/sent.
        topics = ["$SYS/broker/publish/messages/received", "$SYS/broker/clients/connected",
                  "$SYS/broker/subscriptions/count", "$SYS/broker/store/messages/count",
                  "$SYS/broker/store/messages/bytes", "$SYS/broker/version",
                  "$SYS/broker/retained messages/count"]
        watcher.subscribe_many([(topic, 0) for topic in topics])
        latest: dict[str, str] = {}
        deadline = time.monotonic() + 10
        settled = {topics[0]: "25", topics[1]: "2", topics[2]: "8"}  # 7 + own/#
        # A snapshot may predate the watcher's own SUBSCRIBE (1 subscription, not 8): read
        # on until one taken after it came.
        while set(latest) != set(topics) or any(latest[t] != v for t, v in settled.items()):
            message = watcher.expect(timeout=5)
            latest[message.topic] = message.payload.decode()
            assert time.monotonic() < deadline, latest
        samples = scrape(url)
        received = sum(_value(samples, "actorbroker_messages_received_total", f"qos={q}")
                       for q in range(3))
        assert received == 25
        assert latest["$SYS/broker/clients/connected"] == "2" == str(
            int(_value(samples, "actorbroker_clients_connected")))
        assert latest["$SYS/broker/subscriptions/count"] == "8" == str(  # 7 + own/#
            int(_value(samples, "actorbroker_subscriptions")))
        # $SYS is a snapshot every 0.2 s: the last one may predate sys-pub's last PUBACKs
        # (1 in flight there, 0 in the scrape). Both must agree once a later one comes.
        store = "$SYS/broker/store/messages/count"
        while latest[store] != _stored(samples):
            message = watcher.expect(timeout=5)
            latest[message.topic] = message.payload.decode()
            samples = scrape(url)
            assert time.monotonic() < deadline, (latest[store], _stored(samples))
        assert latest["$SYS/broker/version"] == "actorbroker 0.1.0"
    finally:
        pub.close()
        watcher.close()
