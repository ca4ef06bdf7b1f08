"""The live-socket mutation fuzzer (bench/fuzz.py) against ``actorbroker serve`` at its defaults, on every listener kind.

tests/integration/transport/test_transport_fuzz.py fuzzes one listener of
the transport with hypothesis; this runs the whole broker in its own
process: valid packets of every kind from the codec, mutated (bits, bytes,
Remaining Lengths, MQTT 5 property lengths, splices, truncations, or
broken fields inside a packet kept framed), on connections at every
protocol level, over a tcp, tls, ws or wss listener (TLS records and
WebSocket binary frames carry the fuzzed bytes; on ws and wss some inputs
are broken WebSocket frames). The broker must answer only valid packets,
accept every connection, keep a healthy client's QoS 1 round trips going,
log no internal error, name a spec rule in every protocol-error line, and
give its memory back (tcp: within 16 MiB of where it was after its first
5,000 inputs; the others: after the start).

Inputs: 50,000 on tcp, 5,000 on ws, 2,000 on tls and wss (a TLS handshake
per refused input costs more): ``FUZZ_INPUTS_TCP`` and so on. Each run
must send all its inputs within ``FUZZ_SECONDS`` (240, a bound against a
hang; tcp takes about 100 s on two loaded cores). The counts and rates are
printed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.fuzz import run_against_new_broker

#: kind: (inputs, fuzzing connections, inputs before the RSS baseline). TLS connections
#: wait a second for a refused v3.1/v3.1.1 client's EOF (no half-close over TLS), so more
#: of them run at once. On tcp the broker's transient state (topic actors of fuzzed topics
#: live up to a minute) reaches its high-water mark, which RSS keeps, in the first 5,000
#: inputs: the 16 MiB are counted from there (docs/benchmarks.md, "Fuzzing").
_RUNS = {"tcp": (50_000, 32, 5_000), "ws": (5_000, 32, 0), "tls": (2_000, 96, 0),
         "wss": (2_000, 64, 0)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", list(_RUNS))
def test_fuzzed_inputs_leave_the_broker_healthy(tmp_path: Path, kind: str) -> None:
    runs, connections, warmup = _RUNS[kind]
    inputs = int(os.environ.get(f"FUZZ_INPUTS_{kind.upper()}", runs))
    seconds = float(os.environ.get("FUZZ_SECONDS", "240"))
    report = run_against_new_broker(inputs, seed=17, connections=connections,
                                    rss_slack=16.0, workdir=tmp_path, seconds=seconds,
                                    kind=kind, warmup=min(warmup, inputs // 10))
    print(report.summary())
    assert report.inputs == inputs  # all of them, within the time bound
    assert report.refused > 0 and report.taken > 0  # the mutations both pass and fail
    assert report.bad_answers == []
    assert report.open_errors == []
    if kind in ("ws", "wss"):
        assert report.ws_frames > 0
    assert report.healthy_errors == []
    assert len(report.healthy) >= 10
    assert report.log_problems == []  # no traceback, no internal error, alive, RSS back
    assert report.without_rule == []
