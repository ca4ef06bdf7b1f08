"""A slowloris: a client that trickles one packet a byte at a time is closed at connect_timeout.

The keepalive counts whole packets and a keepalive of 0 turns it off, so
without a bound of its own an unfinished packet could hold its buffer (up to
max_packet_size) for ever. The bound is connect_timeout, counted from the
first byte of the packet; a quiet client between packets is not touched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mqtt_testkit import RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, PingReq, PingResp, Publish, encode

TIMEOUT = 1.0


def _trickle(r: RawClient, data: bytes, stop: threading.Event) -> None:
    """One byte every 0.1 s (the attack's own pace, 50 KB would take 80 minutes) until
    ``stop`` or the broker closes."""
    for byte in data:
        if stop.wait(0.1):
            return
        try:
            r.sock.sendall(bytes([byte]))
        except OSError:
            return


def test_a_packet_trickled_a_byte_at_a_time_is_closed(
        start_broker: Callable[..., RunningBroker], tmp_path: object) -> None:
    running = start_broker(broker_config(tmp_path, connect_timeout=TIMEOUT))
    quiet = RawClient(running.host, running.port)
    assert quiet.connect("quiet", keepalive=0) == ConnAck(False, 0)
    slow = {level: RawClient(running.host, running.port, level) for level in (4, 5)}
    stop = threading.Event()
    threads = []
    try:
        for level, r in slow.items():
            assert isinstance(r.connect(f"slow{level}", keepalive=0), ConnAck)
            publish = encode(Publish("big", bytes(50_000)), level)
            threads.append(threading.Thread(target=_trickle, args=(r, publish, stop)))
        started = time.monotonic()
        for t in threads:
            t.start()
        for r in slow.values():
            r.expect_closed(timeout=TIMEOUT + 5)
        took = time.monotonic() - started
        print(f"slowloris closed after {took:.2f}s (connect_timeout {TIMEOUT}s)")
        assert TIMEOUT <= took < TIMEOUT + 2
        assert running.metrics()["stalled_packets"] == 2
        # Silent for longer than the bound, but between packets: still served.
        quiet.send(PingReq())
        assert quiet.recv() == PingResp()
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        quiet.close()
        for r in slow.values():
            r.close()
