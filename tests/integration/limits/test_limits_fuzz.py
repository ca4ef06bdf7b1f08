"""The live-socket mutation fuzzer (bench/fuzz.py) against ``actorbroker serve`` at its defaults.

tests/integration/transport/test_transport_fuzz.py fuzzes one listener of
the transport with hypothesis; this runs the whole broker in its own
process: valid packets of every kind from the codec, mutated (bits, bytes,
Remaining Lengths, MQTT 5 property lengths, splices, truncations), one
input at a time on connections at every protocol level. The broker must
answer only valid packets, keep a healthy client's QoS 1 round trips
going, log no internal error, name a spec rule in every protocol-error
line, and give its memory back.

Inputs: ``FUZZ_INPUTS`` (50,000), within ``FUZZ_SECONDS`` (45): on a busy
machine the time bound ends the run first (each refused input costs the
broker a connection); the count is printed.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.fuzz import run_against_new_broker


def test_fuzzed_inputs_leave_the_broker_healthy(tmp_path: Path) -> None:
    inputs = int(os.environ.get("FUZZ_INPUTS", "50000"))
    seconds = float(os.environ.get("FUZZ_SECONDS", "45"))
    report = run_against_new_broker(inputs, seed=17, connections=16, rss_slack=16.0,
                                    workdir=tmp_path, seconds=seconds)
    print(report.summary())
    assert report.inputs >= min(inputs, 1000)
    assert report.refused > 0 and report.taken > 0  # the mutations both pass and fail
    assert report.bad_answers == []
    assert report.healthy_errors == []
    assert len(report.healthy) >= 10
    assert report.log_problems == []  # no traceback, no internal error, alive, RSS back
    assert report.without_rule == []
