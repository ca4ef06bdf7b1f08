"""The API's client and session lists name each client's current connection: the one
that took the session over, not the one it replaced (they look connections up once
per list, by client id)."""

from __future__ import annotations

from collections.abc import Callable

from actorbroker.app import RunningBroker

from mqtt_testkit import RawClient
from ops_testkit import Http


def test_a_taken_over_client_is_listed_with_its_new_connection(
        ops_broker: Callable[..., RunningBroker], http: Http) -> None:
    broker = ops_broker(data_dir=None)
    first = RawClient(broker.host, broker.port)
    second = RawClient(broker.host, broker.port)
    others = [RawClient(broker.host, broker.port) for _ in range(5)]
    try:
        first.connect("twin", clean=False)
        for n, other in enumerate(others):
            other.connect(f"other-{n}")
        second.connect("twin", clean=False)
        first.expect_closed()   # taken over
        peer = "%s:%d" % second.sock.getsockname()[:2]
        clients = {c["client_id"]: c for c in http.get(
            f"{broker.http_url}/api/v1/clients?state=online")["clients"]}
        sessions = {s["client_id"]: s for s in http.get(
            f"{broker.http_url}/api/v1/sessions")["sessions"]}
        assert clients["twin"]["peer"] == sessions["twin"]["peer"] == peer
        assert http.get(f"{broker.http_url}/api/v1/clients/twin")["peer"] == peer
        for n, other in enumerate(others):
            assert clients[f"other-{n}"]["peer"] == "%s:%d" % other.sock.getsockname()[:2]
    finally:
        for raw in (first, second, *others):
            raw.close()
