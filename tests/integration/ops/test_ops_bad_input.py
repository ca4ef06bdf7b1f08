"""The HTTP listener against hostile clients: malformed requests, huge headers, floods of
connections, slowloris. It answers or closes; the broker and MQTT delivery carry on."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from mqtt_testkit import RawClient
from ops_testkit import Http, scrape

from actorbroker.app import RunningBroker
from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription

MAX_CONNECTIONS = 256  # ConnectionGuard's default


def _raw_http(url: str, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data`` on a fresh socket; everything the server answers until it closes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # it may close before reading it all: what it said is what counts
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
                sock.settimeout(0.5)  # the rest of an answer comes at once
        except ConnectionResetError:
            pass
        except TimeoutError:  # answered, then kept alive: the answer is what counts
            assert out, "no answer and no close"
        return out


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"\x00\x01\x02 garbage \xff\r\n\r\n", b"400"),
    (b"GET /metrics HTTP/9.9\r\n\r\n", b"400"),
    (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 100_000 + b"\r\n\r\n", b"400"),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
     + b"".join(b"X-%d: y\r\n" % i for i in range(500)) + b"\r\n", b"400"),
    (b"PUT /api/v1/log/level HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n"
     + b"{" * 200_000, b"413"),
    (b"POST /api/v1/clients/x/kick HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\nnot hex\r\n", b"400"),
    (b"GET /api/v1/clients/%ff%fe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"404"),
], ids=["garbage", "version", "long-target", "huge-header", "many-headers", "huge-body",
        "bad-chunk", "bad-escape"])
def test_malformed_requests_are_refused_and_the_listener_lives_on(
        ops_broker: Callable[..., RunningBroker], http: Http, request_bytes: bytes,
        status: bytes, caplog: pytest.LogCaptureFixture) -> None:
    broker = ops_broker(data_dir=None)
    for _ in range(20):  # a flood of them costs one log line, without a traceback
        answer = _raw_http(broker.http_url, request_bytes)
        assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == status, answer[:200]
    assert http.get(broker.http_url + "/api/v1/stats")["node"] == "test"
    noisy = [r for r in caplog.records if r.name.startswith(("aiohttp", "actorbroker.http"))]
    assert len(noisy) <= 1 and not any(r.exc_info for r in noisy), noisy


@pytest.fixture
def slow_clients(ops_broker: Callable[..., RunningBroker]) -> Iterator[tuple[RunningBroker,
                                                                       list[socket.socket]]]:
    """A broker and the list of HTTP sockets a test opens (closed afterwards)."""
    broker = ops_broker(data_dir=None)
    socks: list[socket.socket] = []
    try:
        yield broker, socks
    finally:
        for sock in socks:
            sock.close()


def _open_slow(url: str, count: int) -> list[socket.socket]:
    """``count`` sockets each with half a request's headers sent (slowloris)."""
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for i in range(count):
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow-%d: " % i)
        socks.append(sock)
    return socks


def _round_trips(broker: RunningBroker, count: int) -> list[float]:
    """QoS 1 publish -> PUBACK and delivery back, in seconds, for one raw client (the
    project's codec, TCP_NODELAY: nothing of a client library's own pacing is measured)."""
    raw = RawClient(broker.host, broker.port)
    try:
        assert raw.connect("rtt").reason_code == 0
        raw.send(Subscribe(1, (Subscription("rtt", 1),)))
        assert isinstance(raw.recv(), SubAck)
        times = []
        for i in range(count):
            began = time.perf_counter()
            raw.send(Publish("rtt", b"%d" % i, 1, packet_id=i % 60000 + 1))
            seen = set()
            while seen != {PubAck, Publish}:
                packet = raw.recv()
                seen.add(type(packet))
                if isinstance(packet, Publish):
                    assert packet.payload == b"%d" % i
                    raw.send(PubAck(packet.packet_id))
            times.append(time.perf_counter() - began)
        return times
    finally:
        raw.close()


def _p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98]


def test_slow_http_clients_never_delay_mqtt_delivery(
        slow_clients: tuple[RunningBroker, list[socket.socket]], http: Http) -> None:
    broker, socks = slow_clients
    baseline = _round_trips(broker, 200)
    socks += _open_slow(broker.http_url, 50)
    stop = threading.Event()

    def trickle() -> None:  # one header byte per socket every 50 ms: they never finish
        while not stop.wait(0.05):
            for sock in socks:
                try:
                    sock.send(b"a")
                except OSError:
                    pass

    dripper = threading.Thread(target=trickle, daemon=True)
    dripper.start()
    try:
        stats_took = []
        for _ in range(5):  # the API still answers meanwhile
            began = time.perf_counter()
            assert http.get(broker.http_url + "/api/v1/stats")["connections"]["clients"] == 0
            stats_took.append(time.perf_counter() - began)
        loaded = _round_trips(broker, 400)
    finally:
        stop.set()
        dripper.join(5)
    p99, base99 = _p99(loaded), _p99(baseline)
    print(f"\nMQTT QoS 1 round trip p99: {p99 * 1000:.2f} ms with 50 slowloris HTTP clients "
          f"(median {statistics.median(loaded) * 1000:.2f} ms); {base99 * 1000:.2f} ms "
          f"without; /api/v1/stats meanwhile max {max(stats_took) * 1000:.1f} ms")
    # Bound: the HTTP side never holds the loop (a held loop shows as whole seconds); 100 ms
    # leaves room for a machine busy with other work.
    assert p99 < 0.1, p99
    assert max(stats_took) < 1.0


def test_a_client_that_never_finishes_its_request_is_closed(
        slow_clients: tuple[RunningBroker, list[socket.socket]]) -> None:
    broker, socks = slow_clients
    socks += _open_slow(broker.http_url, 3)
    began = time.monotonic()
    for sock in socks:
        sock.settimeout(15)
        try:
            assert sock.recv(100) == b""  # closed without an answer
        except ConnectionResetError:
            pass  # aborted: as good
    took = time.monotonic() - began
    assert 9.0 <= took < 15, took  # ConnectionGuard's idle_timeout is 10 s
    samples = scrape(broker.http_url)
    assert samples[("actorbroker_http_refused_total", "reason=too_slow")] == 3


def test_connections_beyond_the_cap_are_closed_at_once(
        slow_clients: tuple[RunningBroker, list[socket.socket]], http: Http) -> None:
    broker, socks = slow_clients
    socks += _open_slow(broker.http_url, MAX_CONNECTIONS)
    host, port = broker.http_url.removeprefix("http://").split(":")
    extra = socket.create_connection((host, int(port)), timeout=5)
    try:
        extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            assert extra.recv(100) == b""
        except ConnectionResetError:
            pass
    finally:
        extra.close()
    for sock in socks[:10]:  # room again: the API answers
        sock.close()
    deadline = time.monotonic() + 5
    while True:
        status, body = http.call("GET", broker.http_url + "/api/v1/stats")
        if status == 200:
            break
        assert time.monotonic() < deadline
    samples = scrape(broker.http_url)
    assert samples[("actorbroker_http_refused_total", "reason=too_many")] >= 1
