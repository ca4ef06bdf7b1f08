"""Dependencies: the ranges of setup.cfg, the pins of constraints.txt, and what make installs."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _requirements() -> dict[str, list[Requirement]]:
    """'install' and each extra -> its requirements, as setup.cfg declares them."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")

    def parse(text: str) -> list[Requirement]:
        return [Requirement(line) for line in text.splitlines()
                if line.strip() and not line.strip().startswith("#")]

    found = {"install": parse(cfg["options"]["install_requires"])}
    found.update({extra: parse(text) for extra, text in cfg["options.extras_require"].items()})
    return found


def _pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pins = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in pins}


def _find(name: str) -> Requirement:
    for requirements in _requirements().values():
        for requirement in requirements:
            if canonicalize_name(requirement.name) == name:
                return requirement
    raise AssertionError(f"{name} is not declared in setup.cfg")


def test_the_broker_itself_needs_pykka_uvloop_dill_websockets_the_http_listeners_two_and_argon2(
        ) -> None:
    # websockets: the sans-IO WebSocket protocol of ws/wss listeners (no server of its own);
    # aiohttp and prometheus-client: the operations HTTP listener (actorbroker.ops);
    # argon2-cffi: the $argon2id$ entries of Mosquitto 2.1 password files.
    assert [r.name for r in _requirements()["install"]] == [
        "pykka", "uvloop", "dill", "websockets", "aiohttp", "prometheus-client", "argon2-cffi"]


@pytest.mark.parametrize(("name", "refused", "accepted"), [
    ("uvloop", ["0.19.0", "0.20.0"], ["0.21.0", "0.23.0"]),   # CVE-2024-24806 in 0.19/0.20's libuv
    ("pandas", ["2.1.4", "3.0.0"], ["2.2.0", "2.3.3"]),        # PySpark 4.1+ needs 2.2; 3 untested
    ("mypy", ["3.0.0"], ["1.10.0", "2.4.1"]),
    ("pyarrow", ["17.0.0", "27.0.0"], ["18.0.0", "26.0.1"]),
    ("numpy", ["3.0.0"], ["1.24.0", "2.4.6"]),
    ("psutil", ["8.0.0"], ["7.2.2"]),
    ("websockets", ["16.1.1", "18.0"], ["17.1", "17.4"]),  # 17: max_size as (message, frame)
])
def test_floors_and_caps(name: str, refused: list[str], accepted: list[str]) -> None:
    specifier = _find(name).specifier
    assert [v for v in refused if specifier.contains(v)] == []
    assert [v for v in accepted if not specifier.contains(v)] == []


def test_the_build_system_takes_a_setuptools_without_known_cves() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    setuptools = next(Requirement(r) for r in requires if r.startswith("setuptools"))
    assert not setuptools.specifier.contains("78.1.0")  # CVE-2025-47273
    assert setuptools.specifier.contains("78.1.1")


def test_extras_sit_where_they_are_used() -> None:
    extras = {name: {canonicalize_name(r.name) for r in reqs}
              for name, reqs in _requirements().items()}
    assert {"psutil", "py-spy"} <= extras["bench"]  # bench/brokers.py, bench/profile.py
    assert not {"psutil", "py-spy"} & extras["pipeline"]
    assert "import psutil" in (ROOT / "bench" / "brokers.py").read_text()
    assert "/proc/" not in (ROOT / "bench" / "brokers.py").read_text()


def test_constraints_pin_every_declared_requirement_inside_its_range() -> None:
    pins = _pins()
    for requirements in _requirements().values():
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{name} is not pinned in constraints.txt (make constraints)"
            assert requirement.specifier.contains(pins[name]), (
                f"constraints.txt pins {name}=={pins[name]}, outside {requirement}")


def test_make_installs_the_pins_and_run_installs_no_extra() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: venv-run$", makefile, re.M)
    assert re.search(r"^test: .*\bvenv\b", makefile, re.M)
    recipe = makefile.split("$(VENV)/.installed-run:", 1)[1].split("\n\n", 1)[0]
    assert "@$(PIP) -r $(VENV)/requirements-run.txt" in recipe
    assert "PIP     = $(PIP_CMD) install -q -c constraints.txt" in makefile
    # Only the refresh target resolves afresh; every other install goes through $(PIP).
    unpinned = [line.strip() for line in makefile.splitlines()
                if " install " in line and "$(PIP)" not in line and "--upgrade pip" not in line
                and line.startswith("\t") and not line.startswith("\t@echo")]
    assert unpinned == [
        "$(PIP_CMD) install -q --upgrade --upgrade-strategy eager -e '.[$(EXTRAS)]'"]


def test_make_run_installs_setup_cfgs_install_requires() -> None:
    listed = subprocess.run([sys.executable, str(ROOT / "scripts" / "broker-requirements.py")],
                            capture_output=True, text=True, check=True).stdout.split()
    assert [Requirement(r) for r in listed] == _requirements()["install"]


def test_no_deprecated_uvloop_policy() -> None:
    sources = [p.read_text() for p in (ROOT / "actorbroker").rglob("*.py")]
    assert not [s for s in sources if "EventLoopPolicy" in s]


def test_make_run_passes_the_config_the_port_and_any_flag() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # Under `make test` the parent make's MAKEFLAGS/MAKELEVEL would add "Entering directory".
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    dry = subprocess.run(["make", "--no-print-directory", "-n", "-o", "venv-run", "-o",
                          ".venv/.installed-run", "run",
                          "CONFIG=my.toml", "PORT=1884", "ARGS=--log-level debug"],
                         cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    assert dry.stdout.split() == [".venv/bin/python", "-m", "actorbroker.cli", "serve", "--config",
                                  "my.toml", "--port", "1884", "--http-port", "18083",
                                  "--log-level", "debug"]
