"""Crash checker: one run of one seed: broker, clients, the crash plan, the final phase, the verdict.

1. Start the broker; start the subscribers and wait for their SUBACKs;
   start the publishers.
2. Carry out the crash plan, for the drawn duration at least (:class:`.scenario.CrashSpec`): each stop waits
   for its trigger (a delay after listening, a checkpoint line, a client
   leaving, or the start of the process), then SIGKILL or SIGTERM; with
   power loss, the data directory is cut back to what was synced; then the
   broker is started again on the same directory and must listen.
3. Final phase: every client stays connected and acks at once; publishers
   send nothing new and complete their flows; wait (on deliveries) until
   every session has what it is owed, or nothing was delivered for QUIET s
   (QUIET_LIMITED with a queue limit; FINAL_WAIT at most); then SIGTERM.
4. Check (:mod:`.model`) and report, with the command that replays the seed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import model
from .broker import CHECKPOINT, RETENTION, Broker, StartFailed
from .drops import queue_full_drops
from .client import Client
from .publisher import Publisher
from .scenario import CrashSpec, Scenario, draw
from .subscriber import Subscriber

SUBSCRIBE_WAIT = 10.0
TRIGGER_WAIT = 2.0  # a log line or a client's leave that does not come: stop anyway
SETTLE_WAIT = 20.0
FINAL_WAIT = 60.0  # however slow the machine, a drain that keeps going is waited for
TAIL = 0.5  # seconds of traffic at least after the last restart
QUIET = 4.0  # seconds without any delivery that end the final wait
QUIET_LIMITED = 1.5


def command(seed: int, power_loss: bool) -> str:
    """The command that replays ``seed``."""
    return (f"{Path(sys.executable).name} -m tests.crashcheck --seed {seed}"
            f"{' --power-loss' if power_loss else ''}")


@dataclass
class Result:
    seed: int
    power_loss: bool
    scenario: Scenario
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)
    lost: dict[str, list[bytes]] = field(default_factory=dict)
    log_tail: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.violations)

    def report(self) -> str:
        head = (f"seed {self.seed}{' (power loss)' if self.power_loss else ''}: "
                f"{'FAILED' if self.failed else 'ok'} in {self.seconds:.1f} s; {self.figures}")
        if not self.failed:
            return head
        return "\n".join([head, self.scenario.describe(), *self.violations,
                          "broker log (tail):", self.log_tail,
                          f"replay: {command(self.seed, self.power_loss)}"])


def run(seed: int, *, power_loss: bool = False, keep: bool = False) -> Result:
    """Run ``seed`` and return its result (its directory is removed unless ``keep``)."""
    scenario = draw(seed)
    result = Result(seed, power_loss, scenario)
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix=f"crashcheck-{seed}-"))
    broker = Broker(workdir, scenario.broker.toml(), power_loss=power_loss)
    progress = threading.Condition()
    pubs = [Publisher(spec, seed, broker.port, progress) for spec in scenario.publishers]
    subs = [Subscriber(spec, seed, broker.port, progress) for spec in scenario.subscribers]
    clients: list[Client] = [*subs, *pubs]
    v = result.violations
    try:
        broker.start()
        for sub in subs:
            sub.start()
        with progress:
            if not progress.wait_for(lambda: all(s.subscribed_at for s in subs), SUBSCRIBE_WAIT):
                v.append("a subscriber got no SUBACK")
        for pub in pubs:
            pub.start()
        traffic_until = time.monotonic() + scenario.duration
        for crash in scenario.crashes:
            v.extend(_crash(broker, crash, subs))
        # The drawn length of the run, and some traffic after the last restart in any case.
        time.sleep(max(TAIL, traffic_until - time.monotonic()))
        final_began = time.monotonic()
        # With a queue limit, messages may be missing because they were dropped: a shorter wait.
        _final(clients, pubs, subs, progress,
               QUIET_LIMITED if scenario.broker.max_queued_messages else QUIET)
        result.figures["final_s"] = round(time.monotonic() - final_began, 1)
        code = broker.stop("TERM")
        if code != 0:
            v.append(f"the final SIGTERM: exit code {code}")
    except StartFailed as exc:
        v.append(f"restart failed: {exc}")
    finally:
        for client in clients:
            client.stopping.set()
        if broker.proc is not None and broker.proc.poll() is None:
            broker.stop("KILL")
        for client in clients:
            if client.ident is not None:  # a first start that failed: no client was started
                client.join(10)
    log = broker.log_path.read_text(errors="replace")
    limit = scenario.broker.max_queued_messages
    dropped = queue_full_drops(broker.data / "log", limit) if limit else {}
    verdict = model.check(pubs, subs, log, dropped)
    v.extend(verdict.violations)
    if pubs and not verdict.figures["acknowledged"]:
        v.append("no message was acknowledged: the run proved nothing")
    if "Traceback" in log:
        v.append("the broker logged a Traceback")
    result.lost = verdict.lost
    result.figures = {**result.figures, **verdict.figures, "starts": broker.starts,
                      "start_s": [round(s, 2) for s in broker.startup_seconds]}
    if broker.cuts:
        result.figures["cuts"] = broker.cuts
    result.log_tail = _log_excerpt(log)
    result.seconds = time.monotonic() - began
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        result.figures["workdir"] = str(workdir)
    return result


def _crash(broker: Broker, crash: CrashSpec, subs: list[Subscriber]) -> list[str]:
    """Wait for the crash's trigger, stop the broker, start it again; violations."""
    if crash.trigger in ("checkpoint", "retention"):
        pattern = CHECKPOINT if crash.trigger == "checkpoint" else RETENTION
        broker.wait_line(pattern, TRIGGER_WAIT, skip=broker.line_count())
    elif crash.trigger == "offline":
        target = next(s for s in subs if s.spec.cid == crash.target)
        target.wait_left(time.monotonic(), TRIGGER_WAIT)
    elif crash.trigger == "startup":
        broker.stop("KILL")
        broker.spawn()
    time.sleep(crash.delay)  # the crash instant: what the run draws
    code = broker.stop(crash.signal)
    broker.start()
    return [f"SIGTERM: exit code {code}"] if crash.signal == "TERM" and code != 0 else []


def _final(clients: list[Client], pubs: list[Publisher], subs: list[Subscriber],
           progress: threading.Condition, quiet: float) -> None:
    for client in clients:
        client.final.set()
    with progress:
        progress.wait_for(lambda: all(p.settled for p in pubs), SETTLE_WAIT)
    deadline = time.monotonic() + FINAL_WAIT
    last, quiet_since = -1, time.monotonic()
    while any(model.missing(pubs, subs).values()) and time.monotonic() < deadline:
        with progress:  # woken by each delivery; the model is recomputed at most 10 times a second
            progress.wait(0.1)
        count = sum(len(s.deliveries) for s in subs)
        if count != last:
            last, quiet_since = count, time.monotonic()
        elif time.monotonic() - quiet_since > quiet:
            return  # nothing comes any more: what is missing is lost (or was dropped: drops.py)


def _log_excerpt(log: str) -> str:
    """The broker's warnings and errors, and its last lines."""
    lines = log.splitlines()
    notable = [ln for ln in lines if " WARNING " in ln or " ERROR " in ln][-15:]
    return "\n".join(notable + ["..."] + lines[-25:])
