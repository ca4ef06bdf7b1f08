"""`actorbroker check-config` and `serve` through real processes (serving: tests/integration/broker)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from actorbroker import __version__

SCRIPT = Path(sys.executable).with_name("actorbroker")
ENTRY_POINTS = [
    pytest.param([str(SCRIPT)], id="console-script"),
    pytest.param([sys.executable, "-m", "actorbroker.cli"], id="python-m"),
]

BAD = """\
[limits]
max_qos = 3
max_inflight = 5

[[listeners]]
type = "tls"
"""


def _run(command: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )


@pytest.mark.parametrize("command", ENTRY_POINTS)
def test_check_config_lists_every_error_and_exits_1(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(BAD)
    result = _run(command, "check-config", "bad.toml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "bad.toml:2: limits.max_qos must be 0, 1 or 2, not 3",
        "bad.toml:3: unknown option limits.max_inflight; did you mean max_inflight_messages?",
        ('bad.toml:5: listeners[0].certfile must be set, and keyfile too: a "tls" listener '
         "needs certfile and keyfile"),
    ]
    assert result.stderr == ""


@pytest.mark.parametrize("command", ENTRY_POINTS)
def test_check_config_says_ok_and_exits_0(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('[node]\nname = "n1"\n[[listeners]]\nport = 1884\n')
    result = _run(command, "check-config", "good.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok\n", "")


def test_check_config_loads_the_tls_files(tmp_path: Path) -> None:
    key = tmp_path / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(tmp_path / "server.pem"), "-days", "1", "-subj", "/CN=localhost"],
                   capture_output=True, check=True, timeout=30)
    listener = '[[listeners]]\ntype = "{kind}"\nport = {port}\ncertfile = "{cert}"\nkeyfile = "server.key"\n'
    (tmp_path / "tls.toml").write_text(listener.format(kind="tls", port=8883, cert="server.pem")
                                       + listener.format(kind="wss", port=8884, cert="gone.pem"))
    result = _run([str(SCRIPT)], "check-config", "tls.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, ("tls.toml: cannot load the TLS files of listener wss 127.0.0.1:8884: gone.pem: No "
            "such file or directory (check certfile, keyfile, cafile, crlfile)\n"))
    (tmp_path / "tls.toml").write_text(listener.format(kind="tls", port=8883, cert="server.pem"))
    result = _run([str(SCRIPT)], "check-config", "tls.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "ok\n")


def test_check_config_reads_the_password_and_acl_files(tmp_path: Path) -> None:
    (tmp_path / "passwd").write_text("alice:plain-text\n")
    (tmp_path / "acl").write_text("topic read a/#\n")
    (tmp_path / "auth.toml").write_text('[auth]\npassword_file = "passwd"\nacl_file = "acl"\n')
    result = _run([str(SCRIPT)], "check-config", "auth.toml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("auth.toml: [auth] passwd:1: user 'alice': not a Mosquitto "
                                    "password hash"), result.stdout
    (tmp_path / "passwd").write_text("")
    result = _run([str(SCRIPT)], "check-config", "auth.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "ok\n")


def test_check_config_syntax_error_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text("[limits]\nmax_qos = = 1\n")
    result = _run([str(SCRIPT)], "check-config", "broken.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, "broken.toml:2: TOML syntax: Invalid value (column 11)\n",
    )
    result = _run([str(SCRIPT)], "check-config", "nowhere.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (
        1, "nowhere.toml: cannot read the file: No such file or directory\n",
    )


def test_check_config_needs_a_file(tmp_path: Path) -> None:
    result = _run([str(SCRIPT)], "check-config", cwd=tmp_path)
    assert result.returncode == 2 and "FILE" in result.stderr


def test_version(tmp_path: Path) -> None:
    result = _run([str(SCRIPT)], "--version", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"actorbroker {__version__}\n")


def _serve_until_started(command: list[str], *args: str, cwd: Path) -> tuple[int, str]:
    """Run ``serve`` until it logs that it started, SIGTERM it; (exit status, its log)."""
    proc = subprocess.Popen([*command, "serve", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends at EOF if the broker exits instead
            lines.append(line)
            if "actorbroker started" in line:
                proc.send_signal(signal.SIGTERM)
                break
        rest, _ = proc.communicate(timeout=30)
        lines.append(rest)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(lines)


def test_serve_applies_the_file_then_the_flags(tmp_path: Path) -> None:
    data = tmp_path / "srv-ab"
    (tmp_path / "ab.toml").write_text(
        f'[node]\nname = "n1"\ndata_dir = "{data}"\n[log]\nlevel = "warning"\n'
        "[[listeners]]\nport = 1884\n[[listeners]]\nport = 0\n"
    )
    status, output = _serve_until_started([str(SCRIPT)], "--config", "ab.toml", "--port", "0",
                                          "--log-level", "debug", cwd=tmp_path)
    assert status == 0, output
    assert f"node n1, data in {data}, log level debug" in output
    assert "listener tcp 127.0.0.1:0, at most 10000 connections" in output
    assert "listener tcp 127.0.0.1:1884," not in output
    assert data.is_dir()  # created when missing


def test_serve_without_a_file_uses_the_defaults(tmp_path: Path) -> None:
    status, output = _serve_until_started([sys.executable, "-m", "actorbroker.cli"],
                                          "--port", "0", cwd=tmp_path)
    assert status == 0, output
    assert "data in ./data, log level info" in output
    assert (tmp_path / "data").is_dir()


def test_serve_refuses_a_bad_file_or_flag(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(BAD)
    result = _run([str(SCRIPT)], "serve", "--config", "bad.toml", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[0] == "bad.toml:2: limits.max_qos must be 0, 1 or 2, not 3"
    assert len(result.stderr.splitlines()) == 3
    result = _run([str(SCRIPT)], "serve", "--port", "65536", "--log-level", "loud", cwd=tmp_path)
    assert result.returncode == 1
    assert [line.split(" must")[0] for line in result.stderr.splitlines()] == [
        "command line: --port", "command line: --log-level",
    ]
