"""Benchmark: decode and encode throughput of actorbroker.codec, one core.

Run with ``python -m bench.codec`` (or ``python bench/codec.py``) from the
project root. Prints figures; asserts nothing. The project goal it checks: at
least 400k decodes/s and 400k encodes/s for an MQTT 3.1.1 QoS 0 PUBLISH with
a 16-byte payload, on one core of the project machine.

Cases:

* ``v3.1.1 QoS0``: topic ``devices/42/temperature``, 16-byte payload (42 bytes
  on the wire);
* ``v5 QoS0 +2 props``: the same message at MQTT 5 with a Message Expiry
  Interval and a Content Type (67 bytes on the wire);
* ``v5 QoS1 +2 props``: as above at QoS 1 (packet identifier).

Decoding feeds ``--packets`` back-to-back encoded packets to one
``Decoder`` in ``--read``-byte pieces, as a socket would deliver them (a
piece boundary falls inside a packet most of the time). Encoding calls
``encode`` once per packet. Each figure is the best of ``--rounds``;
garbage collection stays on, as in the broker.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable

from actorbroker.codec import Decoder, Properties, Publish, encode

TOPIC = "devices/42/temperature"
PAYLOAD = b"0123456789abcdef"
TWO_PROPERTIES = Properties(message_expiry_interval=3600, content_type="application/json")
CASES: list[tuple[str, int, Publish]] = [
    ("v3.1.1 QoS0, 16-byte payload", 4, Publish(TOPIC, PAYLOAD)),
    ("v5 QoS0, 16-byte payload, 2 properties", 5,
     Publish(TOPIC, PAYLOAD, properties=TWO_PROPERTIES)),
    ("v5 QoS1, 16-byte payload, 2 properties", 5,
     Publish(TOPIC, PAYLOAD, qos=1, packet_id=1234, properties=TWO_PROPERTIES)),
]


def best_rate(run: Callable[[], int], rounds: int) -> float:
    """Best packets/s over ``rounds`` calls of ``run`` (which returns a packet count)."""
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        count = run()
        best = max(best, count / (time.perf_counter() - start))
    return best


def decode_rate(level: int, packet: Publish, count: int, read: int, rounds: int) -> float:
    stream = encode(packet, level) * count
    chunks = [stream[i:i + read] for i in range(0, len(stream), read)]

    def run() -> int:
        decoder = Decoder(level)
        feed = decoder.feed
        decoded = 0
        for chunk in chunks:
            decoded += len(feed(chunk))
        assert decoded == count
        return decoded

    return best_rate(run, rounds)


def encode_rate(level: int, packet: Publish, count: int, rounds: int) -> float:
    def run() -> int:
        for _ in range(count):
            encode(packet, level)
        return count

    return best_rate(run, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.codec", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--packets", type=int, default=200_000, help="packets per round")
    parser.add_argument("--read", type=int, default=65_536, help="bytes per feed() call")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the best is kept")
    parser.add_argument("--cpu", type=int, default=None, help="pin the process to this CPU")
    args = parser.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs;"
          f" {args.packets:,} packets per round, {args.read:,}-byte reads, best of {args.rounds}")
    print(f"{'case':<42} {'wire bytes':>10} {'decode/s':>12} {'encode/s':>12}")
    for name, level, packet in CASES:
        decoded = decode_rate(level, packet, args.packets, args.read, args.rounds)
        encoded = encode_rate(level, packet, args.packets, args.rounds)
        print(f"{name:<42} {len(encode(packet, level)):>10} {decoded:>12,.0f} {encoded:>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
