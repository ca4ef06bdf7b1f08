"""Log amplification: long client ids and connection floods cost a bounded amount of log.

Against ``actorbroker serve`` (the log as an operator gets it): 500 CONNECTs
with 60,000-character client ids are refused (longer than
max_client_id_length), 500 with 65,535-byte ids are refused on their size (over
max_connect_size); ids appear cut to 64 characters with a hash, and the
per-client lines are held to their budget, the count of those held back
reported.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from served_kit import Served

from actorbroker.codec import ConnAck, Connect, Decoder, encode

ATTEMPTS = 500


def _refused(host: str, port: int, client_id: str, level: int) -> bytes:
    """Send one CONNECT, read until the broker closes; what it answered."""
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(encode(Connect("MQTT", level, client_id, True, 60), level))
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
        return received


def test_refused_long_client_ids_add_little_log(served: Callable[..., Served]) -> None:
    broker = served()
    before = sum(len(line) + 1 for line in broker.log_lines())
    answers = set()
    for i in range(ATTEMPTS):
        level = 5 if i % 2 else 4
        client_id = f"{i:05d}" + "x" * 59_995
        connack = Decoder(level).feed(_refused(broker.host, broker.port, client_id, level))
        assert len(connack) == 1 and isinstance(connack[0], ConnAck)
        answers.add((level, connack[0].reason_code))
    assert answers == {(4, 0x02), (5, 0x85)}  # identifier rejected / Client Identifier not valid
    for _ in range(ATTEMPTS):
        # Over 64 KiB with its header: refused on its size, before the id is read.
        _refused(broker.host, broker.port, "y" * 65535, 4)
    broker.serve.stop()
    lines = broker.log_lines()
    added = sum(len(line) + 1 for line in lines) - before
    refused = [line for line in lines if "refused client '" in line]
    print(f"{2 * ATTEMPTS} refused CONNECTs with 60,000 and 65,535 character ids: {added} bytes"
          f" of log in {len(lines)} lines ({len(refused)} 'refused client' lines)")
    assert added < 200_000  # sent: 60 MB of client ids
    assert max(len(line) for line in lines) < 500
    odd = [line for line in refused if "…+59936 #" not in line]
    assert refused and not odd, odd[:3]
    assert any("similar line(s) not logged" in line or "were not logged" in line
               for line in lines)
