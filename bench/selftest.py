"""Benchmark harness self-test: the load generator's own ceiling against a trivial peer. Imports the stdlib and bench.mqttload.

``python -m bench.selftest [--quick]`` runs the generator's publishers and
subscribers against :mod:`bench.mqttload.sink` (a server that only answers
CONNECT/SUBSCRIBE and then discards, acknowledges or streams) on this
machine, and prints the rates. A broker measured by the harness can only
look as fast as these figures; the generator is not the bottleneck of a run
as long as the broker's figure stays well below them. ``bench.run`` runs the
same checks first and puts them in the report.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bench.mqttload.driver import run_load
from bench.mqttload.plan import LoadPlan, PubSpec, SubSpec, WorkerPlan
from bench.mqttload.sink import serve_in_process

__all__ = ["CASES", "run_selftest"]

_CAP = 50_000_000


def _pub_plan(port: int, pubs: int, procs: int, qos: int, duration: float) -> LoadPlan:
    specs = [PubSpec(i, f"self-p{i}", (f"bench/selftest/{i}",), qos, 16, _CAP, (1,),
                     window=100) for i in range(pubs)]
    workers = [WorkerPlan("pub", k, "127.0.0.1", port, publishers=pubs, sub_procs=0,
                          pubs=tuple(specs[k::procs]), duration=duration, credit=0, batch=128)
               for k in range(procs)]
    return LoadPlan("selftest", "flow", workers, lambda sent: {}, qos=qos, publishers=pubs)


def _sub_plan(port: int, subs: int, procs: int, count: int, duration: float) -> LoadPlan:
    specs = [SubSpec(i, f"self-s{i}", ("bench/selftest",), 0) for i in range(subs)]
    workers = [WorkerPlan("sub", k, "127.0.0.1", port, publishers=1, sub_procs=procs,
                          subs=tuple(specs[k::procs]), duration=duration, drain_timeout=2.0)
               for k in range(procs)]
    return LoadPlan("selftest", "flow", workers, lambda sent: {i: {0: count} for i in range(subs)},
                    publishers=1, preset_expected=[count * subs])


#: name -> (description, peer mode, payload, plan factory(port, quick))
CASES: dict[str, tuple[str, str, int, Any]] = {
    "publish-q0": ("publish QoS 0, 16 B: 8 publishers in 2 processes -> discarding peer",
                   "discard", 16, lambda port, q: _pub_plan(port, 8, 2, 0, 1.0 if q else 2.0)),
    "publish-q1": ("publish QoS 1, 16 B, 100 in flight: 50 publishers in 2 processes -> "
                   "acknowledging peer (it decodes every packet)", "ack", 16,
                   lambda port, q: _pub_plan(port, 50, 2, 1, 1.0 if q else 2.0)),
    "subscribe-1": ("subscribe QoS 0, 16 B: 1 subscriber (1 process) <- streaming peer",
                    "source", 16, None),
    "subscribe-1k": ("subscribe QoS 0, 1 KiB: 1 subscriber (1 process) <- streaming peer",
                     "source", 1024, None),
    "subscribe-50": ("subscribe QoS 0, 16 B: 50 subscribers in 2 processes <- streaming peer",
                     "source", 16, None),
}
_SUBS = {"subscribe-1": (1, 1), "subscribe-1k": (1, 1), "subscribe-50": (50, 2)}


def run_selftest(quick: bool = False, cases: list[str] | None = None) -> dict[str, Any]:
    """Run the self-test cases; return {case: {"title", "rate", figures...}}."""
    out: dict[str, Any] = {}
    for name in cases or list(CASES):
        title, mode, payload, factory = CASES[name]
        if name in _SUBS:
            subs, procs = _SUBS[name]
            total = (300_000 if quick else 1_000_000) // (4 if payload > 16 else 1)
            count = max(1, total // subs)
        else:
            count = 0
        port, proc, go, stop = serve_in_process(mode, count, payload)
        try:
            if name in _SUBS:
                plan = _sub_plan(port, subs, procs, count, 20.0)
            else:
                plan = factory(port, quick)
            fig = run_load(plan, on_start=go.set)
        except Exception as exc:  # report and go on with the next case
            out[name] = {"title": title, "error": f"{type(exc).__name__}: {exc}"}
            continue
        finally:
            stop.set()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
        rate = fig["publisher_rate"] if name.startswith("publish") else fig["deliveries_per_s"]
        out[name] = {"title": title, "rate": rate, "sent": fig["sent"],
                     "received": fig["received"], "lost": fig["lost"], "ok": fig["ok"],
                     "cpu_generator_s": fig["cpu_pub_s"] + fig["cpu_sub_s"],
                     "elapsed_s": fig["elapsed_s"] if name in _SUBS else fig["publish_s"]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--cases", help=f"comma-separated subset of {','.join(CASES)}")
    args = parser.parse_args(argv)
    results = run_selftest(args.quick, args.cases.split(",") if args.cases else None)
    for name, r in results.items():
        if "error" in r:
            print(f"{name:14} FAILED: {r['error']}")
        else:
            print(f"{name:14} {r['rate']:>12,.0f} msg/s   ({r['title']}; "
                  f"generator CPU {r['cpu_generator_s']:.2f} s in {r['elapsed_s']:.2f} s)")
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
