"""Prints the broker's own requirements (setup.cfg's install_requires), one a line, for `make run`.

`make run` installs these (pinned by constraints.txt) and runs the broker from
the source tree, without building the package: setup.cfg stays the one place
that lists them. Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import configparser
from pathlib import Path

setup = configparser.ConfigParser()
setup.read(Path(__file__).resolve().parents[1] / "setup.cfg")
for line in setup["options"]["install_requires"].splitlines():
    if line.strip() and not line.strip().startswith("#"):
        print(line.strip())
