"""Fixtures of the security tests: password and ACL files, brokers that use them.

* ``password_file(users)``: a Mosquitto password file made by Debian's
  ``mosquitto_passwd`` (the reference tool, so the test proves we read what
  users bring), ``{user: password}``;
* ``secure(**options)``: a broker (``start_broker``) with those ``[auth]``
  options, in its own data directory.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mqtt_testkit import broker_config

sys.path.insert(0, str(Path(__file__).parent))  # security_kit.py

from actorbroker.app import RunningBroker

MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd")


@pytest.fixture
def password_file(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    if MOSQUITTO_PASSWD is None:
        pytest.skip("mosquitto_passwd (apt package mosquitto) is not installed")
    made = itertools.count(1)

    def make(users: dict[str, str]) -> Path:
        path = tmp_path / f"passwd{next(made)}"
        for user, password in users.items():
            create = [] if path.exists() else ["-c"]
            subprocess.run([MOSQUITTO_PASSWD, *create, "-b", str(path), user, password],
                           check=True, timeout=30, capture_output=True)
        return path
    return make


@pytest.fixture
def secure(tmp_path: Path, start_broker: Callable[..., RunningBroker]
           ) -> Callable[..., RunningBroker]:
    made = itertools.count(1)

    def start(**options: Any) -> RunningBroker:
        return start_broker(broker_config(tmp_path / f"broker{next(made)}", **options))
    return start
