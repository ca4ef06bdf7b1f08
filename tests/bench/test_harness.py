"""The load generator counts honestly: exact counts against a real Mosquitto.

Small bounded runs through the same driver, workers and clients that
``python -m bench.run`` uses. The count bound ends every run here (the
deadline is far), so the figures must be exact; the last test shows that a
message that never arrives is reported as lost, so the check can fail.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from dataclasses import replace

import pytest

from bench import brokers
from bench.brokers import Broker
from bench.mqttload.driver import run_load
from bench.mqttload.plan import LoadPlan, PubSpec, SubSpec, WorkerPlan
from bench.mqttload.stats import Histogram, LinkTable


def _plan(port: int, pubs: Sequence[PubSpec], subs: Sequence[SubSpec],
          hears: dict[int, list[int]], qos: int) -> LoadPlan:
    common = dict(host="127.0.0.1", port=port, publishers=len(pubs), sub_procs=1,
                  duration=20.0, setup_timeout=20.0, drain_timeout=3.0, batch=64)
    workers = [WorkerPlan("sub", 0, subs=tuple(subs), **common),  # type: ignore[arg-type]
               WorkerPlan("pub", 0, pubs=tuple(pubs), **common)]  # type: ignore[arg-type]
    return LoadPlan("test", "flow", workers,
                    lambda sent: {s: {p: sent[p] for p in ps} for s, ps in hears.items()},
                    qos=qos, publishers=len(pubs))


def test_qos1_thousand_messages_exactly(mosquitto: Broker) -> None:
    pubs = [PubSpec(0, "t-p0", ("test/q1",), 1, 16, 1000, (1,), window=100)]
    subs = [SubSpec(0, "t-s0", ("test/q1",), 1)]
    fig = run_load(_plan(mosquitto.port, pubs, subs, {0: [0]}, qos=1), mosquitto.rss)
    assert (fig["sent"], fig["acked"], fig["unacked"]) == (1000, 1000, 0)
    assert (fig["expected"], fig["received"], fig["lost"]) == (1000, 1000, 0)
    assert (fig["duplicates"], fig["reordered"], fig["extra"]) == (0, 0, 0)
    assert fig["stopped_by"] == ["complete"]
    assert fig["latency"]["count"] == 1000
    assert fig["ok"] and not fig["errors"]


def test_qos0_two_publishers_two_subscribers_exactly(mosquitto: Broker) -> None:
    pubs = [PubSpec(i, f"t-p{i}", (f"test/q0/{i}",), 0, 64, 500, (2,)) for i in range(2)]
    subs = [SubSpec(i, f"t-s{i}", ("test/q0/+",), 0) for i in range(2)]
    fig = run_load(_plan(mosquitto.port, pubs, subs, {0: [0, 1], 1: [0, 1]}, qos=0))
    assert fig["sent"] == 1000
    assert (fig["expected"], fig["received"], fig["lost"], fig["duplicates"]) == (2000, 2000, 0, 0)
    assert fig["ok"]


def test_a_message_that_never_arrives_is_reported_lost(mosquitto: Broker) -> None:
    # The subscriber listens to publisher 0's topic only, but the check expects
    # publisher 1's messages too: all 300 of them must show up as lost.
    pubs = [PubSpec(i, f"t-p{i}", (f"test/lost/{i}",), 1, 16, 300, (1,)) for i in range(2)]
    subs = [SubSpec(0, "t-s0", ("test/lost/0",), 1)]
    plan = _plan(mosquitto.port, pubs, subs, {0: [0, 1]}, qos=1)
    plan.workers = [w if w.role == "pub" else replace(w, drain_timeout=0.5)
                    for w in plan.workers]
    fig = run_load(plan)
    assert (fig["sent"], fig["acked"]) == (600, 600)
    assert (fig["received"], fig["lost"]) == (300, 300)
    assert not fig["ok"]


def test_link_table_tells_gaps_late_arrivals_and_duplicates_apart() -> None:
    links = LinkTable(1, dense=True)
    for seq in (0, 1, 4, 2, 2, 5):
        links.count[0] += 1
        if seq == links.last[0] + 1:
            links.last[0] = seq
        else:
            links.irregular(0, seq)
    assert links.gaps == [1]          # 3 never came
    assert links.reordered == [1]     # 2 came late
    assert links.dups == [1]          # 2 came twice
    assert links.last == [5]


def test_histogram_percentiles_merge_processes() -> None:
    a, b = Histogram(), Histogram()
    a.fine[100] = 98
    b.fine[1500] = 1
    b.add_slow(25_000)
    got = Histogram.percentiles([a.to_json(), b.to_json()], (50.0, 99.0, 100.0))
    assert got["count"] == 100
    assert got["p50_ms"] == 0.1005
    assert got["p99_ms"] == 1.5005
    assert got["p100_ms"] == 25.5


def test_the_baseline_broker_runs_the_source_tree_it_is_given(tmp_path, monkeypatch) -> None:
    """``baseline``: actorbroker from ``$BENCH_BASELINE`` (here this checkout), for
    before/after figures in one run; without a tree it says what is missing."""
    monkeypatch.delenv("BENCH_BASELINE", raising=False)
    with pytest.raises(brokers.BrokerUnavailable, match="BENCH_BASELINE"):
        brokers.start("baseline", tmp_path / "none")
    root = Path(brokers.__file__).resolve().parents[1]
    monkeypatch.setenv("BENCH_BASELINE", str(root))
    broker = brokers.start("baseline", tmp_path / "tree")
    try:
        pubs = [PubSpec(0, "b-p0", ("test/base",), 1, 16, 200, (1,), window=50)]
        subs = [SubSpec(0, "b-s0", ("test/base",), 1)]
        fig = run_load(_plan(broker.port, pubs, subs, {0: [0]}, qos=1), broker.rss)
        assert (fig["received"], fig["lost"], fig["acked"]) == (200, 0, 200)
        assert broker.name == "baseline" and fig["ok"]
    finally:
        broker.stop()


def test_rss_and_cpu_cover_the_process_and_its_descendants(tmp_path: Path) -> None:
    """A parent that spawns a child which burns CPU and holds 64 MiB: both counted."""
    child = ("import sys, time; data = bytearray(64 << 20); end = time.process_time() + 0.3\n"
             "while time.process_time() < end: pass\n"
             "print('ready', flush=True); sys.stdin.read()")
    parent = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {child!r}],"
              " stdin=subprocess.PIPE, stdout=sys.stdout); sys.stdin.read(); p.communicate()")
    proc = subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    broker = Broker("tree", proc, 0, tmp_path / "log")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert broker.rss() > 64 << 20
        assert broker.cpu() >= 0.3
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)
    assert broker.rss() == 0 and broker.cpu() == 0
