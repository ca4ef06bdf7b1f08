"""Crash checker command line (run from the repository root).

    python -m tests.crashcheck --seed 42 [--power-loss] [--keep] [--describe]
    python -m tests.crashcheck --soak --seconds 3600 [--out soak-failures.txt]
    python -m tests.crashcheck --soak --seeds 1000 --jobs 4

A failing seed prints what was violated, the scenario, the broker log's
tail and the one command that replays it; exit code 1. ``--soak`` runs new
random seeds (every other one with power loss) until the time or the count
is used up, ``--jobs`` at a time (each seed has its own port, directory and
broker), and appends each failure to ``--out``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path

from .run import Result, command, run
from .scenario import draw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crashcheck", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, help="run this seed")
    parser.add_argument("--power-loss", action="store_true",
                        help="discard what was not fsynced before each restart")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    parser.add_argument("--describe", action="store_true", help="print the scenario and stop")
    parser.add_argument("--soak", action="store_true", help="run new random seeds")
    parser.add_argument("--seconds", type=float, default=0, help="soak this long")
    parser.add_argument("--seeds", type=int, default=0, help="soak this many seeds")
    parser.add_argument("--jobs", type=int, default=1, help="soak: seeds run at once")
    parser.add_argument("--out", type=Path, default=Path("soak-failures.txt"),
                        help="where the soak appends its failures")
    args = parser.parse_args(argv)
    if args.soak:
        return soak(args.seconds, args.seeds, args.out, max(1, args.jobs))
    if args.seed is None:
        parser.error("--seed or --soak")
    if args.describe:
        print(draw(args.seed).describe())
        return 0
    result = run(args.seed, power_loss=args.power_loss, keep=args.keep)
    print(result.report())
    return 1 if result.failed else 0


def soak(seconds: float, seeds: int, out: Path, jobs: int) -> int:
    """Run new seeds until ``seconds`` or ``seeds`` is used up (10 minutes if neither is set)."""
    if not seconds and not seeds:
        seconds = 600.0
    chooser = random.SystemRandom()
    began, started, done, failed = time.monotonic(), 0, 0, 0

    def more() -> bool:
        return (not seeds or started < seeds) and (
            not seconds or time.monotonic() - began < seconds)

    with ProcessPoolExecutor(jobs) as pool:
        running: set[Future[Result]] = set()
        while running or more():
            while more() and len(running) < jobs:
                # Every other seed with power loss; a process each, so runs do not share a GIL.
                running.add(pool.submit(run, chooser.randrange(1 << 31),
                                        power_loss=started % 2 == 1))
                started += 1
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                result = future.result()
                done += 1
                print(result.report().splitlines()[0], flush=True)
                if result.failed:
                    failed += 1
                    with out.open("a") as f:
                        f.write(f"=== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
                                f"{command(result.seed, result.power_loss)}\n"
                                f"{result.report()}\n\n")
    print(f"soak: {done} seed(s) in {time.monotonic() - began:.0f} s, {failed} failed"
          f"{f', written to {out}' if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
