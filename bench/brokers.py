"""Benchmark harness: the brokers under test as subprocesses. Imports the stdlib, psutil and bench.mqttload.wire.

``start(name, workdir)`` starts actorbroker, Mosquitto or amqtt on a free
port of 127.0.0.1 with limits raised so that nothing is dropped (or, with
``defaults=True``, with each broker's default limits), waits until
it answers a CONNECT with a CONNACK, and returns a :class:`Broker` whose
``rss()`` sums the resident memory (psutil) over the broker's process and
its descendants. A broker that is missing or fails to start raises
:class:`BrokerUnavailable` with the reason (and the tail of its log).

* actorbroker: ``.venv/bin/actorbroker serve --config CONF --bind 127.0.0.1
  --port P --data-dir TMP``; queues unlimited, 100 in flight, no connection
  limit; durability at its default (commit log, fsync group commit).
* Mosquitto (Debian package, installed by scripts/install-sysdeps.sh when
  missing): ``/usr/sbin/mosquitto -c CONF``; max_queued_messages 0 and
  max_queued_bytes 0 (no limit), max_inflight_messages 100, set_tcp_nodelay
  true (asyncio and uvloop set TCP_NODELAY on every connection), persistence
  false, which is Mosquitto's default: it keeps messages in memory (with
  persistence true it would only write a snapshot every 30 minutes).
* amqtt (PyPI, pinned below) in its own venv under bench/.venvs/amqtt, created
  on first use because its dependencies may clash with ours; started by
  bench/amqtt_runner.py with the anonymous-auth plugin only.
* baseline: actorbroker as above but from another source tree
  (``BENCH_BASELINE``), for before/after figures taken in one run
  (``python -m bench.run --brokers actorbroker,baseline``); never a default.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from time import monotonic, sleep

import psutil

from bench.mqttload.wire import connect_packet

__all__ = ["AMQTT_VERSION", "BROKERS", "Broker", "BrokerUnavailable", "free_port", "start"]

ROOT = Path(__file__).resolve().parents[1]
AMQTT_VERSION = "0.12.1"
AMQTT_VENV = ROOT / "bench" / ".venvs" / "amqtt"
MOSQUITTO = Path("/usr/sbin/mosquitto")
READY_TIMEOUT = 30.0


class BrokerUnavailable(RuntimeError):
    """The broker is not installed, could not be installed, or did not start."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree(pid: int) -> list[psutil.Process]:
    """``pid`` and its live descendants (empty once it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _rss_tree(pid: int) -> int:
    """Resident memory in bytes summed over ``pid`` and its descendants (0 once it is gone)."""
    total = 0
    for process in _tree(pid):
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:  # ended between listing and reading
            continue
    return total


def _cpu_tree(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live descendants."""
    total = 0.0
    for process in _tree(pid):
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


class Broker:
    """A running broker: ``port``, ``rss()``, ``stop()``."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.name = name
        self.proc = proc
        self.port = port
        self.log = log

    def rss(self) -> int:
        """Resident memory of the broker's processes, in bytes."""
        return _rss_tree(self.proc.pid)

    def cpu(self) -> float:
        """CPU seconds the broker's processes have used so far."""
        return _cpu_tree(self.proc.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def _mqtt_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(connect_packet("bench-ready-check"))
            reply = s.recv(4)
            ok = len(reply) >= 4 and reply[0] == 0x20 and reply[3] == 0
            s.sendall(b"\xe0\x00")
            return ok
    except OSError:
        return False


def _launch(name: str, argv: list[str], port: int, workdir: Path,
            env: dict[str, str] | None = None) -> Broker:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
                                start_new_session=True, env=env)
    broker = Broker(name, proc, port, log)
    deadline = monotonic() + READY_TIMEOUT
    while monotonic() < deadline:
        if proc.poll() is not None:
            tail = broker.log_tail()
            last = tail.splitlines()[-1] if tail else "no output"
            raise BrokerUnavailable(f"{name} exited with code {proc.returncode} before "
                                    f"accepting connections ({last})\n{tail}")
        if _mqtt_ready(port):
            return broker
        sleep(0.05)
    broker.stop()
    raise BrokerUnavailable(f"{name} did not answer CONNECT within {READY_TIMEOUT:.0f} s:\n"
                            f"{broker.log_tail()}")


_RAISED_LIMITS = ("[limits]\nmax_inflight_messages = 100\nmax_queued_messages = 0\n"
                  "max_queued_bytes = 0\n")


def _actorbroker_args(port: int, workdir: Path, defaults: bool,
                      listeners: str = "") -> list[str]:
    """``serve`` and its options: the configuration every actorbroker run uses
    (``listeners``: more ``[[listeners]]`` tables after the tcp one)."""
    conf = workdir / "actorbroker.toml"
    conf.write_text(
        "[log]\nlevel = \"warning\"\n\n"
        "[[listeners]]\nbind = \"127.0.0.1\"\n"
        f"port = {port}\nmax_connections = 0\n\n{listeners}\n"
        + ("" if defaults else _RAISED_LIMITS)
    )
    return ["serve", "--config", str(conf), "--bind", "127.0.0.1", "--port", str(port),
            "--data-dir", str(workdir / "data")]


def _actorbroker(port: int, workdir: Path, defaults: bool, listeners: str = "") -> Broker:
    exe = Path(sys.executable).parent / "actorbroker"
    if not exe.exists():
        raise BrokerUnavailable(f"{exe} missing: install the project (make venv)")
    return _launch("actorbroker",
                   [str(exe), *_actorbroker_args(port, workdir, defaults, listeners)], port,
                   workdir)


def _baseline(port: int, workdir: Path, defaults: bool) -> Broker:
    """actorbroker from the source tree ``$BENCH_BASELINE`` (say, ``git worktree add
    /tmp/base HEAD~1``) with this venv: a change and its baseline in the same run."""
    tree = os.environ.get("BENCH_BASELINE", "")
    if not tree or not (Path(tree) / "actorbroker" / "__init__.py").exists():
        raise BrokerUnavailable("baseline: set BENCH_BASELINE to an actorbroker source tree")
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    argv = [sys.executable, "-c", "from actorbroker.cli import main; raise SystemExit(main())",
            *_actorbroker_args(port, workdir, defaults)]
    return _launch("baseline", argv, port, workdir, env)


def _mosquitto(port: int, workdir: Path, defaults: bool) -> Broker:
    if not MOSQUITTO.exists():
        script = ROOT / "scripts" / "install-sysdeps.sh"
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True)
        if not MOSQUITTO.exists():
            raise BrokerUnavailable(f"{MOSQUITTO} missing and could not be installed: "
                                    f"{done.stderr.strip()[-300:]}")
    conf = workdir / "mosquitto.conf"
    # With defaults: Mosquitto 2.0's max_inflight_messages 20, max_queued_messages 1000
    # (QoS 1/2 beyond those in flight; QoS 0 to an online client counts its unsent packets).
    limits = "" if defaults else (
        "max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 100\n")
    conf.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\n{limits}"
        "max_connections -1\nset_tcp_nodelay true\npersistence false\n"
        "log_dest stderr\nlog_type error\nlog_type warning\n"
    )
    return _launch("mosquitto", [str(MOSQUITTO), "-c", str(conf)], port, workdir)


def ensure_amqtt() -> Path:
    """The python of the amqtt venv, created (with amqtt==AMQTT_VERSION) on first use."""
    python = AMQTT_VENV / "bin" / "python"
    check = [str(python), "-c", "import amqtt, sys; sys.exit(amqtt.__version__ != "
             f"'{AMQTT_VERSION}')"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {AMQTT_VENV} with amqtt=={AMQTT_VERSION} ...", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [[base, "-m", "venv", str(AMQTT_VENV)],
             [str(python), "-m", "pip", "install", "-q", f"amqtt=={AMQTT_VERSION}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise BrokerUnavailable(f"could not set up amqtt: {' '.join(step)}: "
                                    f"{done.stderr.strip()[-500:]}")
    return python


def _amqtt(port: int, workdir: Path, defaults: bool) -> Broker:
    python = ensure_amqtt()
    runner = ROOT / "bench" / "amqtt_runner.py"
    return _launch("amqtt", [str(python), str(runner), "--port", str(port)], port, workdir)


BROKERS: dict[str, Callable[[int, Path, bool], Broker]] = {
    "actorbroker": _actorbroker, "mosquitto": _mosquitto, "amqtt": _amqtt,
    "baseline": _baseline,
}


def start(name: str, workdir: Path, attempts: int = 3, *, defaults: bool = False,
          listeners: str = "") -> Broker:
    """Start broker ``name`` on a free port with its working files in ``workdir``
    (``defaults``: with its default limits; amqtt has none to raise; ``listeners``:
    ``[[listeners]]`` tables added to actorbroker's configuration, say a tls one).

    The port is free when chosen but not reserved: another process (other
    jobs share the machine) may bind it before the broker does. A start that
    fails with "Address already in use" is retried on a new port.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if listeners and name != "actorbroker":
        raise BrokerUnavailable(f"{name}: more listeners are for actorbroker only")
    for attempt in range(attempts):
        try:
            if listeners:
                return _actorbroker(free_port(), workdir, defaults, listeners)
            return BROKERS[name](free_port(), workdir, defaults)
        except BrokerUnavailable as exc:
            if "already in use" not in str(exc) or attempt == attempts - 1:
                raise
        except OSError as exc:
            raise BrokerUnavailable(f"{name}: {exc}") from exc
    raise AssertionError("unreachable")


if __name__ == "__main__":  # manual check: start each broker once and print its RSS
    import tempfile

    for broker_name in sys.argv[1:] or list(BROKERS):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                b = start(broker_name, Path(tmp))
            except BrokerUnavailable as exc:
                print(f"{broker_name}: unavailable: {exc}")
                continue
            print(f"{broker_name}: port {b.port}, pid {b.proc.pid}, RSS {b.rss() / 2**20:.1f} MiB")
            b.stop()
    os._exit(0)
