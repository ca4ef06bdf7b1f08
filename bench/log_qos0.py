"""Benchmark: what ``[storage] log_qos0 = true`` costs QoS 0 traffic. Imports the stdlib and bench.

    python -m bench.log_qos0 [--reps 5] [--quick] [--scenarios fanin,pairs-q0,latency-q0]

The QoS 0 scenarios of bench/run.py (``fanin``: 8 publishers -> 1
subscriber; ``pairs-q0``: 50 publisher/subscriber pairs, both as fast as
the broker goes; ``latency-q0``: 1,000 msg/s, for the delivery latency
below saturation), run back to back
in one process against actorbroker with the configuration every bench run
uses (durability ``fsync``, the default) and ``log_qos0`` off (the
default) or on, in an order that rotates with the repetition, each broker
started fresh on a data dir of its own. Prints per run the deliveries/s,
the delivery latency, the broker's CPU (share of a core, and microseconds
per delivery: the figure that other jobs on the machine disturb least) and
the bytes its log holds at the end (per PUBLISH sent); then the medians
and the ratio on / off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import brokers as broker_mod
from bench.mqttload.driver import LoadError, run_load
from bench.scenarios import build

VARIANTS = {"log_qos0 off": False, "log_qos0 on": True}


def _start(log_qos0: bool, workdir: Path) -> broker_mod.Broker:
    port = broker_mod.free_port()
    args = broker_mod._actorbroker_args(port, workdir)  # noqa: SLF001 (the harness's own)
    conf = workdir / "actorbroker.toml"
    conf.write_text(conf.read_text() + f"\n[storage]\nlog_qos0 = {str(log_qos0).lower()}\n")
    exe = Path(sys.executable).parent / "actorbroker"
    return broker_mod._launch("actorbroker", [str(exe), *args], port, workdir)  # noqa: SLF001


def _log_bytes(workdir: Path) -> int:
    return sum(p.stat().st_size for p in (workdir / "data" / "log").glob("*.log"))


def run(variant: str, scenario: str, quick: bool) -> dict[str, Any]:
    """One scenario against a fresh broker; its figures and the log's size, or an error."""
    with tempfile.TemporaryDirectory(prefix="bench-log-qos0-") as tmp:
        work = Path(tmp)
        broker = _start(VARIANTS[variant], work)
        try:
            fig = run_load(build(scenario, "127.0.0.1", broker.port, quick), broker.rss,
                           broker.cpu)
        except LoadError as exc:
            return {"ok": False, "error": str(exc)}
        finally:
            broker.stop()
        # QoS 0 may lose messages (the driver's check passes them), but a run that delivered
        # nothing measured nothing.
        ok = bool(fig.get("ok")) and bool(fig.get("received"))
        return {"ok": ok, "figures": fig, "log_bytes": _log_bytes(work)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--scenarios", default="fanin,pairs-q0,latency-q0")
    args = parser.parse_args(argv)
    names = list(VARIANTS)
    failed = False
    for scenario in args.scenarios.split(","):
        rates: dict[str, list[float]] = {n: [] for n in names}
        cpus: dict[str, list[float]] = {n: [] for n in names}
        p50s: dict[str, list[float]] = {n: [] for n in names}
        p99s: dict[str, list[float]] = {n: [] for n in names}
        costs: dict[str, list[float]] = {n: [] for n in names}  # broker CPU per message
        for rep in range(args.reps):
            for name in names[rep % 2:] + names[:rep % 2]:
                rec = run(name, scenario, args.quick)
                fig = rec.get("figures") or {}
                rate = fig.get("deliveries_per_s", 0.0)
                per_msg = rec.get("log_bytes", 0) / max(fig.get("sent", 0), 1)
                lat = fig.get("latency", {})
                cpu = fig.get("cpu_broker_s", 0.0) / max(fig.get("elapsed_s", 1.0), 1e-9)
                cost = fig.get("cpu_broker_s", 0.0) * 1e6 / max(fig.get("received", 0), 1)
                if rec["ok"]:
                    rates[name].append(rate)
                    cpus[name].append(cpu)
                    p50s[name].append(lat.get("p50_ms", 0.0))
                    p99s[name].append(lat.get("p99_ms", 0.0))
                    costs[name].append(cost)
                failed |= not rec["ok"]
                print(f"[{rep}] {scenario:9} {name:13} {rate:>10,.0f} deliveries/s  "
                      f"p50 {lat.get('p50_ms', 0):.2f} ms p99 {lat.get('p99_ms', 0):.2f} ms  "
                      f"broker CPU {cpu:.0%} ({cost:.1f} us/delivery)  log {rec.get('log_bytes', 0) / 1e6:,.1f} MB "
                      f"({per_msg:.0f} B/publish)  sent {fig.get('sent', 0):,} "
                      f"lost {fig.get('lost', 0):,}  "
                      f"{'ok' if rec['ok'] else 'FAILED ' + str(rec.get('error') or fig)[:400]}",
                      flush=True)
        def med(values: dict[str, list[float]], name: str) -> float:
            return statistics.median(values[name]) if values[name] else 0.0

        off, on = (med(rates, n) for n in names)
        print(f"\n{scenario}: median deliveries/s off {off:,.0f}, on {on:,.0f}: on/off = "
              f"{on / off if off else 0:.2f}; " + "; ".join(
                  f"{n}: p50 {med(p50s, n):.2f} ms p99 {med(p99s, n):.2f} ms CPU "
                  f"{med(cpus, n):.0%} {med(costs, n):.1f} us/delivery" for n in names) + "\n",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
