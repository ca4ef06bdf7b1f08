"""``actorbroker serve`` as a new user meets it: one-line start-up errors, Mosquitto's flags and files.

Each failing start runs the real command against a real obstacle (a socket
the test holds, a locked or read-only data directory) and checks the one
ERROR line, exit status 1, no traceback, and nothing created on disk.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import RawClient, Serve, broker_config

from actorbroker.app import Broker
from actorbroker.config.mosquitto import HINT
from actorbroker.startup import listen_failure

#: An ERROR line, with the log's timestamp (UTC, ISO 8601, Z).
ERROR = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ERROR   actorbroker: "


def failed_start(cwd: Path, *args: str) -> Serve:
    """Run ``serve ARGS`` to its exit, which must be status 1 with one ERROR line."""
    serve = Serve(cwd, *args)
    try:
        assert serve.finish(30) == 1, serve.log
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
    errors = [line for line in serve.log if " ERROR " in line]
    assert len(errors) == 1, serve.log
    assert not [line for line in serve.log if "Traceback" in line], serve.log
    return serve


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port of 127.0.0.1 that a socket of this test listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_port_in_use_is_one_line_with_the_address_and_creates_nothing(
        tmp_path: Path, held_port: int) -> None:
    serve = failed_start(tmp_path, "--port", str(held_port), "--data-dir", "data")
    assert re.search(ERROR + rf"cannot listen on 127\.0\.0\.1:{held_port}: address already in use "
                     r"\(another broker running\? set --port\)$", "\n".join(serve.log), re.M)
    assert list(tmp_path.iterdir()) == []


def test_tracebacks_show_at_log_level_debug(tmp_path: Path, held_port: int) -> None:
    serve = Serve(tmp_path, "--port", str(held_port), "--data-dir", "data",
                  "--log-level", "debug")
    assert serve.finish(30) == 1
    log = "\n".join(serve.log)
    assert "Traceback" in log and "OSError: [Errno 98]" in log
    assert f"cannot listen on 127.0.0.1:{held_port}: address already in use" in log


def test_an_address_of_another_host_is_one_line(tmp_path: Path) -> None:
    # 203.0.113.0/24 is TEST-NET-3 (RFC 5737): never an address of this host.
    serve = failed_start(tmp_path, "--bind", "203.0.113.7", "--port", "1883", "--data-dir", "d")
    assert re.search(ERROR + r"cannot listen on 203\.0\.113\.7:1883: address not available "
                     r"\(not an address of this host\? set --bind\)$", "\n".join(serve.log), re.M)
    assert list(tmp_path.iterdir()) == []


def test_a_data_directory_in_use_by_another_broker_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker.run_in_thread(broker_config(tmp_path)):  # holds the commit log's lock
        before = sorted(p.name for p in data.rglob("*"))
        serve = failed_start(tmp_path, "--port", "0", "--data-dir", str(data))
        assert sorted(p.name for p in data.rglob("*")) == before
    assert re.search(ERROR + rf"cannot use the data directory {re.escape(str(data))}: it is open in "
                     r"another process \(another broker running\? stop it or set --data-dir\)$",
                     "\n".join(serve.log), re.M)


def _read_only_prefix(directory: Path) -> list[str]:
    """A command prefix under which ``directory`` is read-only, or skip the test.

    As root, permissions do not stop a write: a read-only tmpfs is mounted in
    a private mount namespace (unshare), gone with the process.
    """
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        pytest.skip("a read-only directory for root needs unshare(1)")
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "ro", "tmpfs",
                            str(directory)], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr.strip()}")
    return ["unshare", "-m", "sh", "-c",
            f'mount -t tmpfs -o ro tmpfs "{directory}" && exec "$0" "$@"']


def test_a_read_only_data_directory_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    read_only = tmp_path / "ro"
    read_only.mkdir()
    prefix = _read_only_prefix(read_only)
    data = read_only / "data"
    proc = subprocess.run([*prefix, str(Serve.SCRIPT), "serve", "--port", "0", "--data-dir",
                           str(data)], capture_output=True, text=True, timeout=30)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, lines
    assert [line for line in lines if " ERROR " in line] == [line for line in lines if re.search(
        ERROR + rf"cannot use the data directory {re.escape(str(data))}: (read-only file system|"
                r"permission denied) \(set --data-dir to a writable directory\)$", line)], lines
    assert len([line for line in lines if " ERROR " in line]) == 1 and "Traceback" not in proc.stderr
    read_only.chmod(0o755)
    assert list(read_only.iterdir()) == []


def test_a_failure_inside_the_tree_is_one_line_too(tmp_path: Path) -> None:
    """What the checks before the start cannot see: the log directory is a file."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "log").write_text("not a directory")
    serve = failed_start(tmp_path, "--port", "0", "--data-dir", "data")
    assert re.search(ERROR + r"the broker failed to start: cannot open the commit log in "
                     r"data/log: \[Errno 17\] File exists", "\n".join(serve.log), re.M), serve.log


def test_mosquittos_flags_c_and_p_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text('[node]\nname = "aliased"\n')
    serve = Serve(tmp_path, "-c", "broker.toml", "-p", "0", "--data-dir", "data")
    try:
        serve.wait_for(r"node aliased, data in data")
        serve.wait_for(r"actorbroker started: listening on 127\.0\.0\.1:\d+")
        assert serve.stop() == 0
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO|DEBUG|WARNING|ERROR) ")
    assert all(stamp.match(line) for line in serve.log), serve.log


def test_a_mosquitto_conf_gets_a_pointer_to_the_docs(tmp_path: Path) -> None:
    (tmp_path / "mosquitto.conf").write_text(
        "# a Debian mosquitto.conf\npid_file /run/mosquitto/mosquitto.pid\n\n"
        "persistence true\npersistence_location /var/lib/mosquitto/\nlistener 1883\n")
    proc = subprocess.run([str(Serve.SCRIPT), "serve", "-c", "mosquitto.conf"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == f"mosquitto.conf:2: {HINT}"
    assert "mosquitto.conf:6: mosquitto's listener: `[[listeners]]`" in proc.stderr
    assert "TOML syntax" not in proc.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "mosquitto.conf"]


def test_localhost_listens_on_both_loopbacks(tmp_path: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback on this host: {exc}")
    with Broker.run_in_thread(broker_config(tmp_path, bind="localhost")) as running:
        for address in ("127.0.0.1", "::1"):
            client = RawClient(address, running.port)
            assert client.connect(f"via-{address}").reason_code == 0
            client.disconnect()


@pytest.mark.parametrize(("host", "port", "error", "line"), [
    ("::1", 80, OSError(errno.EACCES, "Permission denied"),
     "cannot listen on [::1]:80: permission denied (ports below 1024 need privileges; set --port)"),
    ("127.0.0.1", 1883, OSError(errno.EACCES, "Permission denied"),
     "cannot listen on 127.0.0.1:1883: permission denied (set --port)"),
    ("broker.example", 1883, socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
     "cannot listen on broker.example:1883: the name does not resolve (set --bind)"),
])
def test_bind_failures_that_this_host_cannot_stage(host: str, port: int, error: OSError,
                                                   line: str) -> None:
    """Root may bind below 1024 and DNS may be unreachable here: the wording, from the errors."""
    assert listen_failure(host, port, error) == line
