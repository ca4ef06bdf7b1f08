"""``actorbroker pipeline``: one clear line and exit 1 for what an operator can fix.

These run the CLI in this process and fail before Spark starts, so they
never touch the shared SparkSession.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

import pytest

from actorbroker.cli import main
from actorbroker.pipeline.commands import parse_time
from actorbroker.pipeline.errors import PipelineError
from actorbroker.pipeline.spark import check_java, check_master


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["pipeline", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_a_missing_data_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = cli_error(capsys, "report", "--data-dir", str(tmp_path / "none"), "--out", str(tmp_path))
    assert "does not exist" in err
    err = cli_error(capsys, "stream", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"),
                    "--checkpoint", str(tmp_path / "c"))
    assert "holds no commit log" in err


@pytest.mark.parametrize("master, message", [
    ("spark//nowhere", "bad master URL"),
    ("local[two]", "bad master URL"),
    ("spark://127.0.0.1:1", "cannot reach the Spark master spark://127.0.0.1:1"),
])
def test_a_bad_master_url(capsys: pytest.CaptureFixture[str], scenario_dir: Path, tmp_path: Path,
                          master: str, message: str) -> None:
    err = cli_error(capsys, "report", "--data-dir", str(scenario_dir), "--out", str(tmp_path),
                    "--master", master)
    assert message in err


def test_no_java(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                 scenario_dir: Path, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    err = cli_error(capsys, "report", "--data-dir", str(scenario_dir), "--out", str(tmp_path),
                    "--master", "local[1]")
    assert "no `java` on PATH" in err and "default-jre-headless" in err
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(PipelineError, match="is not an executable"):
        check_java()


def test_java_and_masters_that_are_fine() -> None:
    assert os.access(check_java(), os.X_OK)
    for master in ("local", "local[2]", "local[*]", "local[2,3]", "yarn", "k8s://https://h:6443"):
        assert check_master(master) == master


def test_bad_times(capsys: pytest.CaptureFixture[str], scenario_dir: Path, tmp_path: Path) -> None:
    err = cli_error(capsys, "report", "--data-dir", str(scenario_dir), "--out", str(tmp_path),
                    "--since", "yesterday")
    assert "bad time 'yesterday'" in err
    err = cli_error(capsys, "report", "--data-dir", str(scenario_dir), "--out", str(tmp_path),
                    "--since", "2025-01-02", "--until", "2025-01-01")
    assert "must be before --until" in err


def test_parse_time() -> None:
    now = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
    assert parse_time("2025-01-31T12:00:00Z") == dt.datetime(2025, 1, 31, 12, tzinfo=dt.UTC)
    assert parse_time("2025-01-31") == dt.datetime(2025, 1, 31, tzinfo=dt.UTC)
    assert parse_time("2025-01-31T12:00:00+02:00") == dt.datetime(2025, 1, 31, 10, tzinfo=dt.UTC)
    assert parse_time("1735689600") == dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    assert parse_time("-30m", now) == now - dt.timedelta(minutes=30)
    assert parse_time("2h", now) == now - dt.timedelta(hours=2)
    assert parse_time("7d", now) == now - dt.timedelta(days=7)
    assert parse_time("now", now) == now
