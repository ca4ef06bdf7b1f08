"""The dashboard's files: served by name only, with the right types and headers, and
shipped in the wheel (an installed broker serves the same page as this tree)."""

from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from actorbroker.app import RunningBroker
from actorbroker.ops.dashboard import STATIC

from mqtt_testkit import broker_config

ROOT = Path(__file__).resolve().parents[3]
ASSETS = sorted(p.name for p in STATIC.iterdir() if p.suffix in (".html", ".js", ".css"))


def get(broker: RunningBroker, path: str, **headers: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", urlsplit(broker.http_url).port, timeout=10)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_the_page_and_each_asset_are_served_with_their_type(broker: RunningBroker) -> None:
    page = get(broker, "/")
    assert page.status == 200
    assert page.headers["Content-Type"].startswith("text/html")
    # Its own scripts only: markup slipped into a table could not run code.
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    for name in ASSETS:
        response = get(broker, f"/static/{name}")
        assert response.status == 200, name
        kind = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
        assert response.headers["Content-Type"].startswith(kind[Path(name).suffix]), name


@pytest.mark.parametrize("path", [
    "/static/", "/static/missing.js", "/static/__init__.py", "/static/..%2f..%2fsetup.cfg",
    "/static/%2e%2e/dashboard.py", "/static/..", "/static/index.html%00.js",
])
def test_nothing_but_the_assets_is_served(broker: RunningBroker, path: str) -> None:
    assert get(broker, path).status == 404
    assert get(broker, "/").status == 200   # and the listener is still there


def test_the_page_needs_no_token_where_the_api_does(
        tmp_path: Path, start_broker: Callable[..., RunningBroker]) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("a-token-of-at-least-16-characters\n")
    broker = start_broker(broker_config(tmp_path / "b", http_enabled=True, http_port=0,
                                        http_token_file=str(token_file)))
    assert get(broker, "/").status == 200
    assert get(broker, "/static/dashboard.js").status == 200
    assert get(broker, "/api/v1/stats").status == 401


def test_every_file_the_page_loads_exists() -> None:
    html = (STATIC / "index.html").read_text()
    wanted = set(re.findall(r'(?:src|href)="static/([^"]+)"', html))
    for script in STATIC.glob("*.js"):
        wanted |= set(re.findall(r'from "\./([^"]+)"', script.read_text()))
    assert wanted and wanted <= set(ASSETS), wanted - set(ASSETS)
    # No CDN, no other host: everything comes from the broker (SVG's namespace is a name).
    for name in ASSETS:
        text = (STATIC / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", text), name


def test_the_wheel_ships_the_dashboard(tmp_path: Path) -> None:
    # Built as a user's `pip install` builds it (isolated, setuptools from pyproject.toml),
    # from a copy: a build leaves build/ and *.egg-info behind in its source tree.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    for package in ("actorbroker", "supervisors"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(source)], check=True, timeout=240, capture_output=True)
    (wheel,) = tmp_path.glob("actorbroker-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"actorbroker/ops/static/{name}" for name in ASSETS} <= names
    assert "actorbroker/ops/dashboard.py" in names
