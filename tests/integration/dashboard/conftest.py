"""Fixtures for the dashboard's browser tests: Debian's chromium driven by Playwright.

* ``browser``: one headless chromium per module, Debian's build
  (``/usr/bin/chromium``, or ``$ACTORBROKER_CHROMIUM``). A machine without
  it fails these tests, never skips them: CI installs it (``make sysdeps``).
* ``page``: a fresh page; the test fails if the page threw a script error or
  logged an error other than a refused or failed request.
* ``broker`` (the one ``client`` connects to) has its commit log and the
  HTTP listener on 127.0.0.1 and a free port; ``url`` is the dashboard's
  address.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from actorbroker.app import RunningBroker

from mqtt_testkit import broker_config

sys.path.insert(0, str(Path(__file__).parent))  # dashboard_testkit, as mqtt_testkit

CHROMIUM = os.environ.get("ACTORBROKER_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"no chromium at {CHROMIUM}: `make sysdeps` installs Debian's "
                    "(these tests never download a browser)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # A console error is a bug too (a script or a style the CSP refused...), except an
    # answer the API refused or a broker gone: the tests cause those on purpose.
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None)
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert not errors, f"the page threw: {errors}"


@pytest.fixture
def broker(tmp_path: Path, start_broker: Callable[..., RunningBroker]) -> RunningBroker:
    """The ``client`` fixture's broker, with its commit log and the HTTP listener."""
    return start_broker(broker_config(tmp_path, http_enabled=True, http_port=0))


@pytest.fixture
def url(broker: RunningBroker) -> str:
    """The dashboard's address."""
    return f"{broker.http_url}/"
