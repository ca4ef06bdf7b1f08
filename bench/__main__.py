"""Benchmark harness: ``python -m bench`` is ``python -m bench.run`` (the broker comparison)."""

import sys

from bench.run import main

if __name__ == "__main__":
    sys.exit(main())
