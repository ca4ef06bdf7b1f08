"""Benchmark harness: actorbroker, Mosquitto and amqtt side by side. Imports the stdlib and bench.

    python -m bench.run [--quick] [--reps 3] [--scenarios fanin,conns]
                        [--brokers actorbroker,mosquitto,amqtt] [--no-docs]
    python -m bench.run --report-only bench/results/latest.json

For each repetition and scenario, runs every broker back to back (the order
rotates with the repetition), each started fresh on a free port of
127.0.0.1. Writes bench/results/run-TIMESTAMP.json (and latest.json), PNG
charts into docs/benchmarks/ and the section "Broker vs Mosquitto" of
docs/benchmarks.md. Loss is reported for every run; a run fails on an
error, a broker that died, or any loss at QoS >= 1.

Exit status 1 when a run of actorbroker or Mosquitto failed or either could
not be started (the other brokers are still measured). amqtt's failures are
reported in the output and the tables but do not change the status: amqtt
0.12.1 loses messages under load (with mosquitto_sub as the subscriber too),
so its QoS 1 runs fail as a matter of course.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import brokers as broker_mod
from bench import report
from bench.mqttload.driver import LoadError, run_load
from bench.scenarios import SCENARIOS, build
from bench.selftest import run_selftest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
PNG_DIR = ROOT / "docs" / "benchmarks"


def _versions(names: list[str]) -> dict[str, str]:
    out = {"python": platform.python_version()}
    if "actorbroker" in names:
        from actorbroker import __version__
        out["actorbroker"] = __version__
    if "mosquitto" in names and broker_mod.MOSQUITTO.exists():
        done = subprocess.run([str(broker_mod.MOSQUITTO), "-h"], capture_output=True, text=True)
        first = (done.stdout or done.stderr).splitlines()[:1]
        out["mosquitto"] = first[0].split()[-1] if first else "?"
    if "amqtt" in names:
        out["amqtt"] = broker_mod.AMQTT_VERSION
    return out


def run_one(broker: str, scenario: str, rep: int, quick: bool) -> dict[str, Any]:
    """One scenario against one freshly started broker; never raises for a failed run."""
    rec: dict[str, Any] = {"scenario": scenario, "broker": broker, "rep": rep, "ok": False}
    with tempfile.TemporaryDirectory(prefix=f"bench-{broker}-") as tmp:
        try:
            b = broker_mod.start(broker, Path(tmp), defaults=SCENARIOS[scenario].defaults)
        except broker_mod.BrokerUnavailable as exc:
            rec["error"] = f"unavailable: {exc}"
            rec["unavailable"] = True
            return rec
        try:
            plan = build(scenario, "127.0.0.1", b.port, quick)
            rec["info"] = plan.info
            fig = run_load(plan, b.rss, b.cpu)
            rec["figures"] = fig
            rec["ok"] = bool(fig.get("ok"))
            if not b.alive():
                rec["ok"] = False
                rec["error"] = f"{broker} exited during the run:\n{b.log_tail()}"
            elif fig.get("lost") or not rec["ok"]:
                rec["log_tail"] = b.log_tail(30)  # drops are logged (WARNING): say why
        except LoadError as exc:
            alive = b.alive()
            rec["error"] = f"{exc}" + ("" if alive else f"\n{broker} died:\n{b.log_tail()}")
            if alive:
                rec["log_tail"] = b.log_tail(30)
            rec["setup_failed"] = exc.phase == "setup"
        finally:
            b.stop()
    return rec


def _line(rec: dict[str, Any], seconds: float) -> str:
    fig = rec.get("figures") or {}
    head = f"[{rec['rep']}] {rec['scenario']:14} {rec['broker']:12}"
    if "error" in rec and not fig:
        return f"{head} FAILED ({seconds:.1f} s): {rec['error'].splitlines()[0][:200]}"
    if "rss_per_conn_kib" in fig:
        body = (f"{fig['connections']} conns, {fig['conns_per_s']:,.0f} conn/s, "
                f"{fig['rss_per_conn_kib']:.2f} KiB/conn")
    else:
        lat = fig.get("latency", {})
        body = (f"{fig.get('deliveries_per_s', 0):>10,.0f} deliveries/s "
                f"{fig.get('publishes_per_s', 0):>10,.0f} publishes/s  "
                f"p50 {lat.get('p50_ms', 0):.3f} ms p99 {lat.get('p99_ms', 0):.3f} ms  "
                f"lost {fig.get('lost')} dup {fig.get('duplicates')} "
                f"reordered {fig.get('reordered')}")
    status = "ok" if rec["ok"] else "FAILED " + (rec.get("error") or
                                                 "; ".join(fig.get("errors", [])) or
                                                 "delivery check").splitlines()[0][:150]
    return f"{head} {body}  [{status}, {seconds:.1f} s]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, from {','.join(SCENARIOS)}")
    parser.add_argument("--brokers", default="actorbroker,mosquitto,amqtt")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3, quick 1)")
    parser.add_argument("--quick", action="store_true", help="short runs and smaller sizes")
    parser.add_argument("--no-selftest", action="store_true",
                        help="skip the load generator's ceiling check")
    parser.add_argument("--no-docs", action="store_true",
                        help="write the JSON only, not docs/benchmarks.md and the PNGs")
    parser.add_argument("--report-only", metavar="JSON",
                        help="only redo docs/benchmarks.md and the PNGs from a results file")
    args = parser.parse_args(argv)
    if args.report_only:
        saved = json.loads(Path(args.report_only).read_text())
        report.charts(saved, PNG_DIR)
        report.write_section(DOC, report.markdown(saved, PNG_DIR.name))
        print(f"wrote {DOC.relative_to(ROOT)} and the PNGs in {PNG_DIR.relative_to(ROOT)}")
        return 0
    scenarios = [s for s in args.scenarios.split(",") if s]
    names = [b for b in args.brokers.split(",") if b]
    unknown = [s for s in scenarios if s not in SCENARIOS] + \
              [b for b in names if b not in broker_mod.BROKERS]
    if unknown:
        parser.error(f"unknown scenario or broker: {', '.join(unknown)}")
    reps = args.reps if args.reps is not None else (1 if args.quick else 3)
    started = time.time()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    meta: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M"), "quick": args.quick, "reps": reps,
        "brokers": names, "scenarios": scenarios, "cpus": os.cpu_count(),
        "load_before": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "versions": _versions(names), "unavailable": {},
    }
    result: dict[str, Any] = {"meta": meta, "runs": [], "selftest": {}}
    if not args.no_selftest:
        print("load generator self-test ...", flush=True)
        result["selftest"] = run_selftest(quick=True)
        for name, r in result["selftest"].items():
            print(f"  {name:14} " + (f"{r['rate']:>12,.0f} msg/s" if "rate" in r
                                      else f"FAILED {r.get('error')}"), flush=True)
    setup_failed: set[tuple[str, str]] = set()
    for rep in range(reps):
        shift = rep % len(names)
        order = names[shift:] + names[:shift]
        for scenario in scenarios:
            for broker in order:
                if broker in meta["unavailable"] or (broker, scenario) in setup_failed:
                    continue
                t = time.monotonic()
                rec = run_one(broker, scenario, rep, args.quick)
                print(_line(rec, time.monotonic() - t), flush=True)
                if rec.pop("unavailable", False):
                    meta["unavailable"][broker] = rec["error"]
                    print(f"  {broker} is skipped from now on", flush=True)
                    continue
                if rec.get("setup_failed"):
                    # e.g. amqtt cannot take 10k subscriptions in time: do not pay it again
                    setup_failed.add((broker, scenario))
                    print(f"  {scenario} on {broker} is skipped from now on", flush=True)
                result["runs"].append(rec)
                out_path.write_text(json.dumps(result, indent=1, default=str))
    meta["duration_s"] = time.time() - started
    meta["load_after"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = json.dumps(result, indent=1, default=str)
    out_path.write_text(text)
    (RESULTS / "latest.json").write_text(text)
    print(f"results: {out_path.relative_to(ROOT)} ({meta['duration_s'] / 60:.1f} min)")
    if not args.no_docs:
        pngs = report.charts(result, PNG_DIR)
        report.write_section(DOC, report.markdown(result, PNG_DIR.name))
        print(f"wrote {DOC.relative_to(ROOT)} and {', '.join(p.name for p in pngs)}")
    failed = [r for r in result["runs"] if not r["ok"]]
    for r in failed:
        print(f"FAILED: {r['scenario']} on {r['broker']} (rep {r['rep']}): "
              f"{(r.get('error') or '; '.join(r.get('figures', {}).get('errors', [])) or 'lost ' + str(r.get('figures', {}).get('lost'))).splitlines()[0][:200]}")
    for name, why in meta["unavailable"].items():
        print(f"UNAVAILABLE: {name}: {why.splitlines()[0][:200]}")
    strict = {"actorbroker", "mosquitto"}
    return 1 if any(r["broker"] in strict for r in failed) or \
        strict & set(meta["unavailable"]) else 0


if __name__ == "__main__":
    sys.exit(main())
