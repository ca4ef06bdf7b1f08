"""`actorbroker check-config` and `serve` through real processes."""

from __future__ import annotations

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
        'bad.toml:6: listeners[0].type "tls" is not supported yet (only "tcp")',
    ]
    assert result.stderr == ""


@pytest.mark.parametrize("command", ENTRY_POINTS)
def test_check_config_says_ok_and_exits_0(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('[node]\nname = "n1"\n[[listeners]]\nport = 1884\n')
    result = _run(command, "check-config", "good.toml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok\n", "")


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


def test_serve_applies_the_file_then_the_flags(tmp_path: Path) -> None:
    (tmp_path / "ab.toml").write_text(
        '[node]\nname = "n1"\ndata_dir = "/srv/ab"\n[log]\nlevel = "warning"\n'
        "[[listeners]]\nport = 1884\n[[listeners]]\nport = 1885\n"
    )
    result = _run([str(SCRIPT)], "serve", "--config", "ab.toml", "--port", "2883",
                  "--log-level", "debug", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "node n1, data in /srv/ab, log level debug" in result.stdout
    assert "listener tcp 127.0.0.1:2883, at most 10000 connections" in result.stdout
    assert "listener tcp 127.0.0.1:1885," in result.stdout


def test_serve_without_a_file_uses_the_defaults(tmp_path: Path) -> None:
    result = _run([sys.executable, "-m", "actorbroker.cli"], "serve", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "data in ./data, log level info" in result.stdout
    assert "listener tcp 127.0.0.1:1883," in result.stdout


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
