"""Benchmark: 50 publisher/subscriber pairs at QoS 1 through the commit log, against Mosquitto. Imports the stdlib and bench.

    python -m bench.durability [--reps 3] [--quick] [--modes fsync,os,memory]

The ``pairs-q1`` scenario of bench/run.py (50 publishers, each with its own
subscriber and topic, QoS 1, 100 PUBLISHes in flight per publisher, loss
and order checked per message), run back to back against:

* actorbroker with ``[storage] durability = "fsync"`` (the default: a
  PUBACK leaves only after the group commit's fdatasync), and for reference
  ``os`` (written, not fsynced) and ``memory`` (no log);
* Mosquitto 2 with its default persistence (``persistence false``: QoS 1
  messages live in memory; with persistence on it only writes a snapshot
  every 30 minutes, never per message).

Brokers start fresh for each run, in an order that rotates with the
repetition. Prints the median deliveries/s per broker, loss, and the ratio
fsync / Mosquitto (goal: at least 0.7 with zero loss).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import brokers as broker_mod
from bench.run import run_one

GOAL = 0.7


def _actorbroker_with(mode: str) -> Any:
    def start(port: int, workdir: Path, defaults: bool) -> broker_mod.Broker:
        if defaults:
            raise broker_mod.BrokerUnavailable("bench.durability runs with raised limits only")
        exe = Path(sys.executable).parent / "actorbroker"
        conf = workdir / "actorbroker.toml"
        conf.write_text(
            "[log]\nlevel = \"warning\"\n\n"
            "[[listeners]]\nbind = \"127.0.0.1\"\n"
            f"port = {port}\nmax_connections = 0\n\n"
            "[limits]\nmax_inflight_messages = 100\nmax_queued_messages = 0\n"
            "max_queued_bytes = 0\n\n"
            f"[storage]\ndurability = \"{mode}\"\n"
        )
        return broker_mod._launch(  # noqa: SLF001 (the harness's own launcher)
            "actorbroker", [str(exe), "serve", "--config", str(conf), "--data-dir",
                            str(workdir / "data")], port, workdir)
    return start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--modes", default="fsync,os,memory")
    args = parser.parse_args(argv)
    names = [f"actorbroker-{mode}" for mode in args.modes.split(",") if mode] + ["mosquitto"]
    for name in names:
        if name.startswith("actorbroker-"):
            broker_mod.BROKERS[name] = _actorbroker_with(name.split("-", 1)[1])
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for rep in range(args.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            rec = run_one(name, "pairs-q1", rep, args.quick)
            fig = rec.get("figures") or {}
            results[name].append(rec)
            cpu = fig.get("cpu_broker_s", 0.0) / max(fig.get("elapsed_s", 1.0), 1e-9)
            print(f"[{rep}] {name:18} {fig.get('deliveries_per_s', 0):>10,.0f} deliveries/s  "
                  f"lost {fig.get('lost')}  broker CPU {cpu:.0%} of a core  "
                  f"{'ok' if rec['ok'] else 'FAILED ' + str(rec.get('error', ''))[:200]}",
                  flush=True)
    print("\n| broker | deliveries/s (median) | runs | lost (all runs) | vs Mosquitto |")
    print("|---|---:|---:|---:|---:|")
    medians = {}
    for name, recs in results.items():
        good = [r["figures"]["deliveries_per_s"] for r in recs if r["ok"]]
        medians[name] = statistics.median(good) if good else 0.0
    base = medians.get("mosquitto") or 0.0
    for name, recs in results.items():
        lost = sum((r.get("figures") or {}).get("lost") or 0 for r in recs)
        ratio = f"{medians[name] / base:.2f}" if base else "-"
        print(f"| {name} | {medians[name]:,.0f} | {sum(r['ok'] for r in recs)}/{len(recs)} | "
              f"{lost} | {ratio} |")
    fsync = medians.get("actorbroker-fsync", 0.0)
    if base and fsync:
        met = fsync / base >= GOAL
        print(f"\nfsync / Mosquitto = {fsync / base:.2f} (goal >= {GOAL}: "
              f"{'met' if met else 'NOT met'})")
    failed = [n for n, recs in results.items() if not all(r["ok"] for r in recs)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
