"""The supervision tree dumped to the log: SIGUSR1 to ``actorbroker serve`` and POST /api/v1/dump."""

from __future__ import annotations

import logging
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Client, Serve
from ops_testkit import Http

from actorbroker.app import RunningBroker


@pytest.fixture
def serve() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_sigusr1_logs_the_tree_and_the_broker_lives_on(tmp_path: Path, serve: list[Serve]
                                                      ) -> None:
    broker = Serve(tmp_path, "--data-dir", "data", "--port", "0")
    serve.append(broker)
    port = int(broker.wait_for(r"actorbroker started: listening on 127\.0\.0\.1:(\d+)").group(1))
    for _ in range(2):  # twice: the first dump leaves the handler in place
        broker.proc.send_signal(signal.SIGUSR1)
        broker.wait_for(r"INFO +actorbroker\.dump: supervision tree \(SIGUSR1\), \d+ actor")
        broker.wait_for(r"actorbroker\.dump:   root supervisor Supervisor alive")
        broker.wait_for(r"actorbroker\.dump:       core/registry worker RegistryActor alive "
                        r"mailbox=\d+ restarts=0")
        broker.wait_for(r"actorbroker\.dump:     listeners supervisor .* children=1")
        broker.wait_for(r"actorbroker\.dump:   busiest mailboxes \(top 10\): ")
    client = Client("127.0.0.1", port, "after-usr1")  # still serving
    try:
        assert client.connect().rc == 0
    finally:
        client.close()
    assert broker.proc.poll() is None
    assert broker.stop() == 0


def test_api_dump_logs_what_sigusr1_logs(ops_broker: Callable[..., RunningBroker], http: Http,
                                         caplog: pytest.LogCaptureFixture) -> None:
    broker = ops_broker(data_dir=None)
    client = Client(broker.host, broker.port, "dump\nINFO forged")  # a session named so
    try:
        assert client.connect().rc == 0
        with caplog.at_level(logging.INFO, logger="actorbroker.dump"):
            status, body = http.call("POST", broker.http_url + "/api/v1/dump")
    finally:
        client.close()
    assert status == 200
    assert not [line for line in body["logged"] if not line.isprintable()]
    assert [line for line in body["logged"]  # escaped, as repr() writes it
            if re.search(r"'core/sessions/\d/dump\\nINFO forged' worker SessionActor", line)]
    logged = [r.getMessage() for r in caplog.records if r.name == "actorbroker.dump"]
    assert logged[0].startswith("supervision tree (admin API), ")
    assert logged[1:] == ["  " + line for line in body["logged"]]
    assert any("core/registry worker RegistryActor alive" in line for line in body["logged"])
    assert body["logged"][-1].startswith("busiest mailboxes (top 10): ")
    assert http.call("GET", broker.http_url + "/api/v1/dump")[0] == 405
