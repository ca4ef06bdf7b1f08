"""The dashboard's charts in a real browser (Debian's headless chromium through
Playwright) against a real broker, with a real MQTT load (paho): the figures move
while messages flow; the page says when the broker is gone and asks for the token
when the API wants one. The load test also takes the README's screenshot."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Page

from actorbroker.app import Broker, RunningBroker

from dashboard_testkit import open_live
from mqtt_testkit import Client, broker_config

SCREENSHOT = Path(__file__).resolve().parents[3] / "docs" / "dashboard.png"


def legend(page: Page, chart: str, key: str) -> str:
    return page.inner_text(f"#chart-{chart} .series[data-key='{key}'] .value")


def wait_legend_above(page: Page, chart: str, key: str, floor: float) -> None:
    """Wait until the chart's legend shows ``key`` above ``floor`` (it reads 1.2k, 3M too)."""
    page.wait_for_function(
        """([chart, key, floor]) => {
            const text = document.querySelector(`#chart-${chart} .series[data-key='${key}'] .value`)
                .textContent;
            const scale = {k: 1e3, M: 1e6}[text.slice(-1)] || 1;
            return parseFloat(text) * scale > floor;
        }""", arg=[chart, key, floor])


def samples(page: Page, chart: str) -> int:
    return int(page.get_attribute(f"#chart-{chart}", "data-samples") or 0)


def pixels(page: Page, chart: str) -> str:
    return str(page.eval_on_selector(f"#chart-{chart} canvas", "c => c.toDataURL()"))


@contextmanager
def load(host: str, port: int, topic: str, *, seconds: float = 30.0,
         limit: int = 20_000) -> Iterator[None]:
    """A paho publisher sending QoS 1 messages to ``topic`` from a thread, about 500 a
    second, until the block ends, ``seconds`` pass or ``limit`` messages went out."""
    publisher = Client(host, port, "dash-load")
    publisher.connect()
    stop = threading.Event()

    def run() -> None:
        deadline = time.monotonic() + seconds
        for _ in range(limit):
            if stop.is_set() or time.monotonic() > deadline:
                return
            publisher.paho.publish(topic, b"x" * 64, qos=1)
            stop.wait(0.002)   # paces the load; the test never waits on it

    thread = threading.Thread(target=run, name="dash-load", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
        publisher.close()


def test_charts_follow_a_live_load(page: Page, url: str, broker: RunningBroker, tmp_path: Path,
                                   client: Callable[..., Client]) -> None:
    subscriber = client("dash-sub")
    subscriber.subscribe("load/#", qos=1)
    for room, celsius in (("kitchen", b"21.5"), ("hall", b"19.0"), ("attic", b"15.5")):
        subscriber.publish(f"home/{room}/temperature", celsius, qos=1, retain=True)
    open_live(page, url)
    wait_legend_above(page, "connections", "connected", 0.5)
    before = {chart: (samples(page, chart), pixels(page, chart))
              for chart in ("rates", "connections", "queues", "fsync")}
    with load(broker.host, broker.port, "load/a"):
        # Rates are per second (the broker samples them each second): about 500 in, as many out.
        wait_legend_above(page, "rates", "in", 10)
        wait_legend_above(page, "rates", "out", 10)
        wait_legend_above(page, "connections", "connected", 1.5)  # subscriber and publisher
        # QoS 1 with the commit log: each message waited for a group commit's sync.
        wait_legend_above(page, "fsync", "fsync_mean", 0)
        # The busiest clients and topics: the publisher and its topic, with messages moving.
        page.wait_for_function(
            "() => [...document.querySelectorAll('#top-panel tbody tr')].some("
            "tr => tr.cells[0].textContent === 'dash-load' && Number(tr.cells[1].textContent) > 0)")
        page.wait_for_function(
            "() => [...document.querySelectorAll('#top-topics-panel tbody tr')].some("
            "tr => tr.cells[0].textContent === 'load/a' && Number(tr.cells[1].textContent) > 0)")
        # Pointing at the start of the chart shows that sample in the legend: before the load.
        box = page.locator("#chart-rates canvas").bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
        assert float(legend(page, "rates", "in")) < 10
        assert page.inner_text("#chart-rates .at").endswith(" s ago")
        page.mouse.move(0, 0)
        wait_legend_above(page, "rates", "in", 10)
        assert page.inner_text("#chart-rates .at") == ""
        screenshot(page, tmp_path)
    for chart, (count, image) in before.items():
        page.wait_for_function(
            "([chart, count]) => Number(document.querySelector(`#chart-${chart}`).dataset.samples) > count",
            arg=[chart, count])
        assert pixels(page, chart) != image, f"the {chart} chart was not redrawn"
    assert legend(page, "queues", "queued") != "–"


def screenshot(page: Page, tmp_path: Path) -> None:
    """The page under load with an actor selected, as a PNG; with UPDATE_SCREENSHOT=1 in
    the environment it replaces docs/dashboard.png (the README's picture)."""
    page.click("g.node[data-path='core/registry']")
    page.wait_for_selector("#actor:not([hidden])")
    page.eval_on_selector("#tree-view", "view => { view.scrollTop = 0; }")
    # Twenty seconds of history, so that the picture shows lines rather than dots.
    page.wait_for_function("() => Number(document.querySelector('#chart-rates').dataset.samples) >= 20",
                           timeout=40_000)
    path = SCREENSHOT if os.environ.get("UPDATE_SCREENSHOT") == "1" else tmp_path / "dashboard.png"
    png = page.screenshot(path=str(path), full_page=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1280   # the IHDR's width: the viewport's


def test_a_broker_gone_shows_as_an_error(page: Page, tmp_path: Path) -> None:
    config = broker_config(tmp_path, http_enabled=True, http_port=0)
    with Broker.run_in_thread(config) as broker:
        open_live(page, f"{broker.http_url}/")
    page.wait_for_selector("#status[data-state='error']")


def test_the_page_asks_for_the_token_the_api_wants(page: Page, tmp_path: Path,
                                                   start_broker: Callable[..., RunningBroker]
                                                   ) -> None:
    token = "dashboard-token-0123456789"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    broker = start_broker(broker_config(tmp_path / "auth", http_enabled=True, http_port=0,
                                        http_token_file=str(token_file)))
    page.goto(f"{broker.http_url}/")
    page.wait_for_selector("#auth:not([hidden])")
    assert page.get_attribute("#status", "data-state") == "auth"
    page.fill("#auth-token", "not-the-token-0123456789")
    page.click("#auth button")
    page.wait_for_selector("#auth:not([hidden])")   # asked again
    assert page.input_value("#auth-token") == ""
    page.fill("#auth-token", token)
    page.click("#auth button")
    page.wait_for_selector("#status[data-state='live']")
    page.wait_for_selector("g.node[data-path='core/registry']")
    assert page.is_hidden("#auth")
