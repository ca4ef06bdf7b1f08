"""The admin API against a real broker and real clients: views, actions, authentication."""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mqtt_testkit import Client, RawClient
from ops_testkit import Http, scrape

from actorbroker.app import RunningBroker
from actorbroker.codec import Connect, Disconnect, Properties, Will
from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import DisconnectCause, Record, SessionDisconnected

R = TypeVar("R", bound=Record)
TOKEN = "s3cret-token-0123456789abcdef"


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _wait(condition: Callable[[], object], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _journaled(data: Path, kind: type[R], client_id: str, timeout: float = 10.0) -> R:
    """The first ``kind`` record of ``client_id`` in the committed log in ``data`` (read from
    outside, as the pipeline does), polled for: the log is written by the storage actor."""
    deadline = time.monotonic() + timeout
    while True:
        for entry in LogReader(data / "log").read():
            record = entry.record
            if isinstance(record, kind) and getattr(record, "client_id", None) == client_id:
                return record
        assert time.monotonic() < deadline, f"no {kind.__name__} of {client_id!r} in the log"
        time.sleep(0.01)


def _paths(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every node of an /api/v1/tree answer by its path."""
    out = {tree["path"]: tree}
    for child in tree["children"]:
        out.update(_paths(child))
    return out


# -- authentication ------------------------------------------------------------------


def test_a_token_file_guards_the_api_not_the_metrics(
        ops_broker: Callable[..., RunningBroker], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    broker = ops_broker(data_dir=None, http_token_file=str(token_file))
    url = broker.http_url
    caplog.set_level(logging.WARNING, logger="actorbroker.http")
    status, body = Http().call("GET", url + "/api/v1/stats")
    assert status == 401 and body["error"] == "unauthorized"
    assert "refused GET /api/v1/stats from 127.0.0.1: no bearer token" in caplog.text
    assert Http("x" * len(TOKEN)).call("GET", url + "/api/v1/stats")[0] == 401
    assert Http(TOKEN[:-1]).call("GET", url + "/api/v1/tree")[0] == 401
    assert Http().call("GET", url + "/api/v1/clients",
                       headers={"Authorization": f"Basic {TOKEN}"})[0] == 401
    status, stats = Http(TOKEN).call("GET", url + "/api/v1/stats")
    assert status == 200 and stats["node"] == "test"
    samples = scrape(url)  # scrapers need no token
    assert samples[("actorbroker_http_refused_total", "reason=unauthorized")] == 4


def test_without_a_token_file_the_loopback_is_let_in(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None)
    assert http.get(broker.http_url + "/api/v1/sessions") == {"total": 0, "sessions": []}
    status, body = http.call("GET", broker.http_url + "/api/v1/nothing-here")
    assert status == 404


# -- clients and sessions ------------------------------------------------------------


def test_clients_sessions_and_one_clients_detail(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None)
    api = broker.http_url + "/api/v1"
    made = []
    try:
        for cid in ("dev-1", "dev-2"):
            made.append(Client(broker.host, broker.port, cid,
                               will=("wills/" + cid, b"gone", 1, False)))
            assert made[-1].connect().rc == 0
        made[0].subscribe("cmd/dev-1/#", 1)
        sleeper = Client(broker.host, broker.port, "sleeper", clean=False)
        made.append(sleeper)
        assert sleeper.connect().rc == 0
        sleeper.subscribe("feed", 1)
        sleeper.disconnect()
        _wait(lambda: "sleeper" not in broker.node.names.online, "sleeper still online")
        for i in range(3):
            made[1].publish("feed", b"%d" % i, qos=1)

        listed = http.get(api + "/clients?prefix=dev-")
        assert listed["total"] == 2
        assert [c["client_id"] for c in listed["clients"]] == ["dev-1", "dev-2"]
        assert all(c["state"] == "online" and c["peer"].startswith("127.0.0.1:")
                   for c in listed["clients"])
        offline = http.get(api + "/clients?state=offline")
        assert [c["client_id"] for c in offline["clients"]] == ["sleeper"]
        assert http.get(api + "/clients?limit=1")["total"] == 3
        assert http.call("GET", api + "/clients?state=sleeping")[0] == 400
        assert http.call("GET", api + "/clients?limit=zero")[0] == 400

        one = http.get(api + "/clients/dev-1")
        assert one["subscriptions"] == [{"filter": "cmd/dev-1/#", "qos": 1}]
        assert one["will"] == {"topic": "wills/dev-1", "qos": 1, "retain": False,
                               "payload_bytes": 4}
        assert one["state"] == "online" and one["inflight"] == 0 and one["queued"] == 0
        queued = http.get(api + "/clients/sleeper")
        assert queued["state"] == "offline" and queued["queued"] == 3
        assert queued["queued_bytes"] == 3 and queued["last_seen"] <= time.time()
        assert http.call("GET", api + "/clients/nobody")[0] == 404
        sessions = http.get(api + "/sessions")
        assert [s["client_id"] for s in sessions["sessions"]] == ["dev-1", "dev-2", "sleeper"]
    finally:
        for c in made:
            c.close()


def test_kick_disconnects_with_administrative_action_and_publishes_the_will(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None)
    api = broker.http_url + "/api/v1"
    watcher = Client(broker.host, broker.port, "watcher")
    raw = RawClient(broker.host, broker.port, level=5)
    try:
        assert watcher.connect().rc == 0
        watcher.subscribe("wills/#", 0)
        raw.send(Connect("MQTT", 5, "kicked-one", True, 60,
                         will=Will("wills/kicked-one", b"bye")))
        assert raw.recv().reason_code == 0
        _wait(lambda: "kicked-one" in broker.node.names.online, "never online")
        assert http.call("POST", api + "/clients/kicked-one/kick") == (
            200, {"kicked": "kicked-one"})
        packet = raw.recv()
        assert isinstance(packet, Disconnect) and packet.reason_code == 0x98
        raw.expect_closed()
        assert watcher.expect().payload == b"bye"  # the client did not DISCONNECT
        assert http.call("POST", api + "/clients/kicked-one/kick")[0] == 404
    finally:
        raw.close()
        watcher.close()


@pytest.mark.parametrize("level", [4, 5])
def test_a_kicked_durable_session_is_journaled_as_administrative(
        ops_broker: Callable[..., RunningBroker], http: Http, tmp_path: Path, level: int) -> None:
    """The commit log says why the connection ended: an operator, not the network (the
    transport forwards the kick's 0x98 to the session, which journals its cause)."""
    broker = ops_broker()  # the commit log in tmp_path/data
    raw = RawClient(broker.host, broker.port, level=level)
    try:
        expiry = Properties(session_expiry_interval=600) if level == 5 else Properties()
        raw.send(Connect("MQTT", level, "kicked-durable", False, 60, properties=expiry))
        assert raw.recv().reason_code == 0
        _wait(lambda: "kicked-durable" in broker.node.names.online, "never online")
        assert http.call("POST", broker.http_url + "/api/v1/clients/kicked-durable/kick") == (
            200, {"kicked": "kicked-durable"})
        raw.expect_closed()
        gone = _journaled(tmp_path / "data", SessionDisconnected, "kicked-durable")
        assert (gone.cause, gone.reason_code) == (DisconnectCause.ADMINISTRATIVE, 0x98)
        assert gone.reason == "kicked by an operator (admin API)"
        assert gone.expiry_interval > 0  # durable: the session lives on
    finally:
        raw.close()


@pytest.mark.parametrize("storage", [False, True], ids=["memory", "commit-log"])
def test_delete_session_ends_it_for_good(
        ops_broker: Callable[..., RunningBroker], http: Http, storage: bool) -> None:
    broker = ops_broker() if storage else ops_broker(data_dir=None)
    api = broker.http_url + "/api/v1"
    first = Client(broker.host, broker.port, "doomed", clean=False)
    online = Client(broker.host, broker.port, "online-doomed", clean=False)
    try:
        assert first.connect().rc == 0
        first.subscribe("doomed/#", 1)
        first.disconnect()
        if storage:  # it hibernates: the keeper holds it, no actor
            _wait(lambda: http.get(api + "/clients/doomed")["hibernated"], "never hibernated")
        assert online.connect().rc == 0
        assert http.call("DELETE", api + "/sessions/doomed") == (200, {"deleted": "doomed"})
        assert http.call("DELETE", api + "/sessions/online-doomed") == (
            200, {"deleted": "online-doomed"})  # kicked first
        assert http.get(api + "/sessions")["total"] == 0
        assert http.call("DELETE", api + "/sessions/doomed")[0] == 404
        again = Client(broker.host, broker.port, "doomed", clean=False)
        try:
            assert again.connect().session_present is False
            assert http.get(api + "/clients/doomed")["subscriptions"] == []
        finally:
            again.close()
    finally:
        online.close()
        first.close()


# -- retained messages ---------------------------------------------------------------


def test_retained_listed_by_filter_and_deleted(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker()  # durable: the deletion must reach the commit log too
    api = broker.http_url + "/api/v1"
    pub = Client(broker.host, broker.port, "retainer")
    try:
        assert pub.connect().rc == 0
        for topic in ("room/1/temp", "room/2/temp", "hall/light"):
            pub.publish(topic, topic.encode(), qos=1, retain=True)
        found = http.get(api + "/retained?filter=room/%2B/temp")
        assert found["total"] == 2
        assert [r["topic"] for r in found["retained"]] == ["room/1/temp", "room/2/temp"]
        assert found["retained"][0]["payload"] == "room/1/temp"
        assert http.get(api + "/retained")["total"] == 3
        assert http.call("GET", api + "/retained?filter=room/%23/x")[0] == 400
        assert http.call("DELETE", api + "/retained/" + _q("room/1/temp")) == (
            200, {"deleted": "room/1/temp"})
        assert http.call("DELETE", api + "/retained/" + _q("room/1/temp"))[0] == 404
        assert http.call("DELETE", api + "/retained/" + _q("room/+/temp"))[0] == 400
        late = Client(broker.host, broker.port, "late")
        try:
            assert late.connect().rc == 0
            late.subscribe("room/#", 0)
            assert late.expect().topic == "room/2/temp"
            pub.publish("room/marker", b"m")  # the next message: nothing else was retained
            assert late.expect().topic == "room/marker"
        finally:
            late.close()
    finally:
        pub.close()


# -- the tree and kill ---------------------------------------------------------------


def test_kill_crashes_an_actor_and_its_supervisor_restarts_it(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker()
    api = broker.http_url + "/api/v1"
    keeper = Client(broker.host, broker.port, "victim", clean=False)
    try:
        assert keeper.connect().rc == 0
        keeper.subscribe("kept/#", 1)
        paths = _paths(http.get(api + "/tree"))
        assert paths["core/registry"]["actor"] == "RegistryActor"
        assert paths["core/storage"]["alive"] is True
        victim = next(p for p in paths if p.startswith("core/sessions/") and
                      p.endswith("/victim"))
        shard = victim.rsplit("/", 1)[0]
        assert paths[shard]["restarts_total"] == 0

        assert http.call("POST", f"{api}/actors/{_q(victim)}/kill") == (
            200, {"killed": victim, "actor": "SessionActor"})
        _wait(lambda: _paths(http.get(api + "/tree"))[shard]["restarts_total"] == 1,
              "the shard never restarted the session")
        assert scrape(broker.http_url)[(
            "actorbroker_supervisor_restarts_total", f"supervisor={shard}")] == 1
        # A persistent session: the restarted actor took its state back from the log.
        _wait(lambda: "victim" not in broker.node.names.online, "still online after the crash")
        assert http.get(api + "/clients/victim")["subscriptions"] == [
            {"filter": "kept/#", "qos": 1}]

        # A thread actor too: the storage actor crashes, the core restarts (rest_for_one).
        assert http.call("POST", f"{api}/actors/core%2Fstorage/kill")[0] == 200
        _wait(lambda: _paths(http.get(api + "/tree"))["core"]["restarts_total"] >= 1,
              "the core never restarted")
        again = Client(broker.host, broker.port, "after-restart")
        try:
            assert again.connect().rc == 0
            again.subscribe("alive", 1)
            again.publish("alive", b"yes", qos=1)
            assert again.expect().payload == b"yes"
        finally:
            again.close()

        assert http.call("POST", f"{api}/actors/root/kill")[0] == 403
        assert http.call("POST", f"{api}/actors/no-such-actor/kill")[0] == 404
        status, body = http.call("POST", f"{api}/actors/0/kill")  # topics/0 and sessions/0
        assert status == 409 and "core/topics/0" in body["error"]
    finally:
        keeper.close()


# -- configuration and log level -----------------------------------------------------


def test_config_in_force_and_log_level_at_run_time(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None, max_qos=1)
    api = broker.http_url + "/api/v1"
    config = http.get(api + "/config")
    assert config["limits"]["max_qos"] == 1 and config["http"]["enabled"] is True
    assert config["listeners"][0]["port"] == 0
    logger = logging.getLogger("actorbroker.session")
    before = logger.level
    try:
        status, body = http.call("PUT", api + "/log/level",
                                 {"level": "debug", "logger": "actorbroker.session"})
        assert status == 200 and body["level"] == "debug"
        assert logger.level == logging.DEBUG
        assert http.call("PUT", api + "/log/level", {"level": "loud"})[0] == 400
        assert http.call("PUT", api + "/log/level", ["debug"])[0] == 400
        assert http.call("PUT", api + "/log/level", {"level": "info", "logger": "a b"})[0] == 400
        status, body = http.call("PUT", api + "/log/level", b"not json".decode())
        assert status == 400
    finally:
        logger.setLevel(before)


def test_stats_has_the_headline_figures(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker()
    c = Client(broker.host, broker.port, "stat")
    try:
        assert c.connect().rc == 0
        c.subscribe("s", 1)
        c.publish("s", b"abc", qos=1)
        assert c.expect().payload == b"abc"
        # Its PUBACK may still be on its way (CI saw 1 in flight): wait until the broker
        # has it, then every figure must be as asserted.
        _wait(lambda: http.get(broker.http_url + "/api/v1/stats")["queues"]["inflight"] == 0,
              "the client's PUBACK never settled the message")
        stats = http.get(broker.http_url + "/api/v1/stats")
        assert stats["connections"]["clients"] == 1 and stats["sessions"]["online"] == 1
        assert stats["messages"]["received_by_qos"] == [0, 1, 0]
        assert stats["storage"]["mode"] == "fsync" and stats["fsync"]["count"] >= 1
        assert set(stats["rates"]) >= {"publish_received", "publish_sent", "bytes_in"}
        assert stats["queues"] == {"messages": 0, "bytes": 0, "inflight": 0, "longest": 0,
                                   "offline_stored": 0}
        assert "actors" not in stats  # the tree is walked on demand only
        actors = http.get(broker.http_url + "/api/v1/stats?actors=1")["actors"]
        assert actors["count"] >= 20 and actors["restarts"] == 0  # root, core, 16 shards...
    finally:
        c.close()


def test_killing_the_http_listener_itself_answers_then_it_comes_back(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None)
    before = broker.http_url
    assert http.call("POST", before + "/api/v1/actors/listeners%2Fhttp/kill") == (
        200, {"killed": "listeners/http", "actor": "ListenerActor"})

    def restarted() -> bool:  # port 0: the new listener has a new port
        try:
            return broker.http_url != before
        except RuntimeError:
            return False  # between the two
    _wait(restarted, "the HTTP listener never came back")
    tree = _paths(http.get(broker.http_url + "/api/v1/tree"))
    assert tree["listeners/http"]["restarts"] == 1 and tree["listeners"]["restarts_total"] == 1
    assert tree["listeners/listener-0"]["restarts"] == 0  # MQTT was not touched
