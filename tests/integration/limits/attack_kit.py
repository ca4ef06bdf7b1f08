"""Test support for the attack-by-attack memory test: a healthy client that keeps timing
QoS 1 round trips on its own thread, and the RSS figures of an attack run twice.

:class:`Healthy` wraps :class:`bench.storm.Prober` in a thread that records when each
round trip started and ended, so that a test can ask how many fitted inside an
attack's window. :func:`run_twice` runs an attack twice against a served broker,
waits (polling /proc, with a deadline) for its RSS to come back after each run,
and returns the figures. :func:`send_zeros` is the body of the floods.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from served_kit import Served
from bench.storm import Prober

MB = 1024 * 1024


def send_zeros(sock: socket.socket, first: bytes, total: int) -> None:
    """Send ``first``, then zeros in 256 KiB writes up to ``total`` bytes (the floods'
    bodies); OSError once the broker closed (reset or broken pipe)."""
    chunk = bytes(256 * 1024)
    sock.sendall(first)
    sent = len(first)
    while sent < total:
        sock.sendall(chunk)
        sent += len(chunk)


class Healthy:
    """A client doing QoS 1 round trips about 50 times a second until :meth:`stop`."""

    def __init__(self, host: str, port: int) -> None:
        self.prober = Prober(host, port)
        self.trips: list[tuple[float, float]] = []  # (started, ended), monotonic
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):  # the client's own pace
            started = time.monotonic()
            try:
                self.prober.round_trip()
            except BaseException as exc:  # reported by the test through check()
                self.error = exc
                return
            self.trips.append((started, time.monotonic()))

    def within(self, start: float, end: float) -> list[float]:
        """Durations of the round trips that started and ended between ``start`` and ``end``."""
        return [e - s for s, e in list(self.trips) if s >= start and e <= end]

    def count_since(self, since: float) -> int:
        """Round trips that started after ``since`` and ended."""
        return sum(s >= since for s, _ in list(self.trips))

    def wait_for_trips(self, since: float, count: int, timeout: float = 15.0) -> None:
        """Poll until ``count`` round trips started after ``since`` ended."""
        deadline = time.monotonic() + timeout
        while self.count_since(since) < count:
            assert self.error is None, f"the healthy client failed: {self.error!r}"
            assert time.monotonic() < deadline, f"fewer than {count} round trips in {timeout}s"
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(35)  # a round trip's socket timeout is 30 s
        self.prober.close()


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux: 5 to /proc/PID/clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@dataclass(frozen=True, slots=True)
class Run:
    """One run of an attack: RSS before, its peak, after it settled; round trips meanwhile."""

    before: int
    peak: int
    after: int
    trips: list[float]
    took: float
    rounds: int

    def line(self) -> str:
        slowest = max(self.trips) * 1000 if self.trips else float("nan")
        return (f"RSS {self.before / MB:.1f} / peak {self.peak / MB:.1f} / after "
                f"{self.after / MB:.1f} MB; {self.rounds} round(s) in {self.took:.1f}s,"
                f" {len(self.trips)} round trips"
                f" (max {slowest:.0f} ms)")


def run_once(broker: Served, healthy: Healthy, attack: Callable[[int, int], None], run: int,
             reference: int, slack: int, trips: int, *, rounds_before: int = 0) -> Run:
    """Run ``attack(run, n)`` for n = 0, 1, ... until its window holds ``trips`` round
    trips (a short attack is repeated: the healthy client is served *while* it goes on);
    then poll until RSS is within ``slack`` of ``reference`` (AssertionError with the
    figures if not), ``slack`` more for each round beyond ``rounds_before`` (the
    reference run's): the allocator's high-water mark grows with the rounds a run does,
    until it has seen the most. Measured with the subscription storm, ten runs of one
    to three rounds on one broker: 59.4, 59.9, 60.1 MB after one, two, three rounds,
    then 60.1 MB flat; a leak grows at every run, at equal rounds too."""
    before = broker.rss
    reset_peak(broker.pid)
    started = time.monotonic()
    done = 0
    while done == 0 or healthy.count_since(started) < trips:
        assert time.monotonic() - started < 30, f"{done} rounds, too few round trips"
        attack(run, done)
        done += 1
    ended = time.monotonic()
    peak = broker.peak
    meanwhile = healthy.within(started, ended)
    assert healthy.error is None, f"the healthy client failed: {healthy.error!r}"
    assert len(meanwhile) >= trips, (
        f"run {run}: {len(meanwhile)} round trips in the attack's {ended - started:.2f}s")
    high = broker.rss
    if rounds_before:
        slack += max(0, done - rounds_before) * slack  # the same slack again per round
    broker.wait_until(lambda: broker.rss - reference < slack, timeout=20,
                      what=f"run {run}: RSS within {slack / MB:.1f} MB of {reference / MB:.1f} MB"
                           f" (it was {high / MB:.1f} MB after the attack)")
    return Run(before, peak, broker.rss, meanwhile, ended - started, done)
