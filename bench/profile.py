"""Benchmark harness: one scenario against actorbroker under py-spy. Imports the stdlib and bench.

    python -m bench.profile --scenario routes [--quick] [--setup] [--rate 250]
                            [--top 30] [--out bench/results/profile-routes.txt]

Starts actorbroker as ``bench.run`` does (same configuration), attaches
``py-spy record`` (from the ``bench`` extra) to it when the start barrier
opens (``--setup``: as soon as the broker answers, so connecting and
subscribing are profiled too), runs the scenario once, and prints the
scenario's figures and the functions where the broker's threads spent their
samples: *self* (the function was on top of the stack) and *total* (it was
anywhere on the stack), as shares of all samples. The collapsed stacks are
kept (``--out``, py-spy's "raw" format) for flame graphs
(``py-spy``'s own SVG: ``--svg``).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import brokers as broker_mod
from bench.mqttload.driver import run_load
from bench.scenarios import SCENARIOS, build

__all__ = ["main", "summarize"]

ROOT = Path(__file__).resolve().parents[1]


def _py_spy() -> str:
    exe = Path(sys.executable).parent / "py-spy"
    found = str(exe) if exe.exists() else shutil.which("py-spy")
    if not found:
        raise SystemExit("py-spy missing: pip install -e '.[bench]'")
    return found


def _frame(frame: str) -> str:
    """``func (path/to/module.py:123)`` -> ``module.func`` (line dropped)."""
    name, _, where = frame.partition(" (")
    path = where.split(":", 1)[0]
    module = Path(path).stem if path else "?"
    return f"{module}.{name}"


def summarize(raw: Path, top: int = 30) -> str:
    """Self and total shares per function from py-spy's collapsed ("raw") output."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";")[1:]]  # [0] is the thread
        if not frames:
            continue
        samples += count
        own[frames[-1]] += count
        for name in set(frames):
            total[name] += count
    if not samples:
        return "no samples"
    lines = [f"{samples} samples", "", f"{'self %':>7}  {'total %':>7}  function"]
    for name, count in own.most_common(top):
        lines.append(f"{100 * count / samples:7.1f}  {100 * total[name] / samples:7.1f}  {name}")
    lines += ["", f"{'total %':>7}  function (inclusive, top {top})"]
    for name, count in total.most_common(top):
        lines.append(f"{100 * count / samples:7.1f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="fanin", choices=sorted(SCENARIOS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--setup", action="store_true", help="profile the set-up phase too")
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None, help="collapsed stacks file")
    parser.add_argument("--svg", type=Path, default=None, help="also write a flame graph")
    parser.add_argument("--native", action="store_true",
                        help="sample C frames too (shows the garbage collector, syscalls)")
    args = parser.parse_args(argv)
    out = args.out or ROOT / "bench" / "results" / f"profile-{args.scenario}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = _py_spy()
    args.spy_args = ["--native"] if args.native else ["--nonblocking"]
    procs: list[subprocess.Popen[bytes]] = []

    def attach(pid: int) -> None:
        common = ["--pid", str(pid), "--rate", str(args.rate), *args.spy_args]
        procs.append(subprocess.Popen([spy, "record", *common, "--format", "raw",
                                       "--output", str(out)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        if args.svg:
            procs.append(subprocess.Popen([spy, "record", *common, "--output", str(args.svg)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        broker = broker_mod.start("actorbroker", Path(tmp))
        try:
            if args.setup:
                attach(broker.proc.pid)
            plan = build(args.scenario, "127.0.0.1", broker.port, args.quick)
            figures = run_load(plan, broker.rss, broker.cpu,
                               on_start=None if args.setup else lambda: attach(broker.proc.pid))
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            broker.stop()
    keys = ("publishes_per_s", "deliveries_per_s", "lost", "cpu_broker_s", "rss_after")
    print(", ".join(f"{k} {figures.get(k)!r}" for k in keys))
    lat = figures.get("latency") or {}
    print(f"latency p50 {lat.get('p50_ms')} ms, p99 {lat.get('p99_ms')} ms")
    print(summarize(out, args.top))
    print(f"collapsed stacks: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
