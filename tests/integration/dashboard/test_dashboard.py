"""The dashboard in a real browser (Debian's headless chromium through Playwright)
against a real broker, with real MQTT clients (paho) making the load.

What an operator relies on: the charts move while messages flow, a kill in the
tree shows as a restart (the count goes up, the row flashes), the tables'
search finds what it should and nothing else, the retained browser shows
payloads as text (never as markup), and the page asks for the token when the
API wants one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from actorbroker.app import Broker, RunningBroker

from mqtt_testkit import Client, RawClient, broker_config

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
        for n in range(limit):
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


def node(page: Page, name: str) -> str:
    return f"g.node[data-name='{name}']"


def open_live(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#status[data-state='live']")


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


def kill_from_the_tree(page: Page, row: str) -> int:
    """Select ``row`` in the tree, kill it (accepting the question); its restarts before."""
    page.wait_for_selector(row)
    restarts = int(page.get_attribute(row, "data-restarts") or "-1")
    assert "flash" not in (page.get_attribute(row, "class") or "")
    page.click(row)
    page.wait_for_selector("#actor:not([hidden])")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#actor-kill")
    return restarts


def test_a_kill_in_the_tree_shows_the_restart(page: Page, url: str) -> None:
    open_live(page, url)
    sys_actor = "g.node[data-path='core/sys']"
    restarts = kill_from_the_tree(page, sys_actor)
    # The last child of a rest_for_one supervisor: it alone is restarted.
    page.wait_for_selector(f"{sys_actor}.flash.alive[data-restarts='{restarts + 1}']")
    assert page.text_content(f"{sys_actor} .restarts") == str(restarts + 1)
    assert page.inner_text("#actor-result") == "killed"
    assert page.inner_text("#actor-name") == "core/sys"
    assert page.inner_text("#actor-restarts").startswith(str(restarts + 1))
    assert "flash" not in (page.get_attribute("g.node[data-path='core/registry']", "class") or "")


def test_a_killed_session_flashes_its_supervisor(page: Page, url: str,
                                                client: Callable[..., Client]) -> None:
    client("dash-victim", clean=False)
    open_live(page, url)
    row = node(page, "dash-victim")
    kill_from_the_tree(page, row)
    path = page.inner_text("#actor-name")
    shard = f"g.node[data-path='{path.rsplit('/', 1)[0]}']"
    # The restarted actor finds its connection gone and leaves (the session hibernates):
    # the restart shows on its supervisor, the row it had is gone.
    page.wait_for_selector(f"{shard}.flash[data-children-restarts='1']")
    page.wait_for_selector(row, state="detached")
    assert page.get_attribute(shard, "data-restarts") == "0"
    assert page.inner_text("#actor-alive") == "gone from the tree"
    assert page.is_disabled("#actor-kill")


def test_the_root_cannot_be_killed_and_the_page_says_why(page: Page, url: str) -> None:
    open_live(page, url)
    kill_from_the_tree(page, "g.node[data-path='']")
    page.wait_for_function("() => document.querySelector('#actor-result').textContent !== ''")
    assert page.inner_text("#actor-result").startswith("HTTP 403: the root supervisor")
    assert page.get_attribute("g.node[data-path='']", "data-restarts") == "0"


def test_a_kill_declined_kills_nothing(page: Page, url: str,
                                       client: Callable[..., Client]) -> None:
    client("dash-spared", clean=False)
    open_live(page, url)
    spared = node(page, "dash-spared")
    page.click(spared)
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#actor-kill")
    # A marker: a client connecting after the click shows in the tree, and by then
    # the declined kill would have restarted the spared session had it been sent.
    client("dash-marker")
    page.wait_for_selector(node(page, "dash-marker"))
    assert page.get_attribute(spared, "data-restarts") == "0"
    assert "flash" not in (page.get_attribute(spared, "class") or "")


def rows(page: Page, panel: str) -> list[str]:
    return [text for text in page.locator(f"#{panel}-panel tbody tr").all_inner_texts()]


def test_tables_search(page: Page, url: str, client: Callable[..., Client]) -> None:
    for name in ("alpha-1", "alpha-2", "beta-1"):
        client(name, clean=name != "alpha-2")
    open_live(page, url)
    for panel in ("clients", "sessions"):
        page.wait_for_function(
            "panel => [...document.querySelectorAll(`#${panel}-panel tbody tr`)]"
            ".filter(tr => /alpha-1|alpha-2|beta-1/.test(tr.textContent)).length === 3",
            arg=panel)
        search = page.locator(f"#{panel}-panel input.search")
        search.fill("ALPHA")   # case does not matter
        shown = rows(page, panel)
        assert len(shown) == 2 and all("alpha-" in row for row in shown), shown
        assert page.inner_text(f"#{panel}-panel .count").startswith("2 of ")
        search.fill("beta-1")
        assert [row.split("\t")[0] for row in rows(page, panel)] == ["beta-1"]
        search.fill("no such client")
        assert rows(page, panel) == []
        search.fill("")
        assert len(rows(page, panel)) >= 3


def test_retained_browser_shows_payloads_as_text(page: Page, url: str,
                                                 client: Callable[..., Client]) -> None:
    publisher = client("dash-retainer")
    markup = "<img src=x onerror=\"window.injected=1\"><b>bold</b>"
    publisher.publish("dash/a/one", markup.encode(), qos=1, retain=True)
    publisher.publish("dash/b/two", b"21.5", qos=1, retain=True)
    publisher.publish("other/three", b"3", qos=1, retain=True)
    open_live(page, url)
    page.fill("#retained-filter", "dash/a/#")
    page.press("#retained-filter", "Enter")
    page.wait_for_function(
        "() => document.querySelectorAll('#retained-panel tbody tr').length === 1")
    assert "dash/a/one" in rows(page, "retained")[0]
    assert markup in page.inner_text("#retained-panel tbody")
    assert page.locator("#retained-panel tbody img, #retained-panel tbody b").count() == 0
    assert page.evaluate("window.injected") is None
    # The filter's first level as a link: everything under dash/.
    page.click("#retained-path a >> text=dash")
    assert page.input_value("#retained-filter") == "dash/#"
    page.wait_for_function(
        "() => document.querySelectorAll('#retained-panel tbody tr').length === 2")
    topics = sorted(row.split("\t")[0] for row in rows(page, "retained"))
    assert topics == ["dash/a/one", "dash/b/two"]
    # A filter the broker refuses is said in the panel; the page stays live.
    page.fill("#retained-filter", "dash/#/a")
    page.press("#retained-filter", "Enter")
    page.wait_for_selector("#retained-error:has-text('not a valid topic filter')")
    assert rows(page, "retained") == []
    assert page.get_attribute("#status", "data-state") == "live"


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


def test_the_page_lives_through_a_core_restart(page: Page, url: str,
                                               client: Callable[..., Client]) -> None:
    open_live(page, url)
    registry = "g.node[data-path='core/registry']"
    restarts = kill_from_the_tree(page, registry)
    # rest_for_one: the registry and every sibling after it start again; meanwhile the
    # API may answer 503 ("the registry is restarting"), and the page carries on.
    page.wait_for_selector(f"{registry}.flash[data-restarts='{restarts + 1}']")
    client("after-the-restart")
    page.wait_for_function(
        "() => document.querySelector('#clients-panel tbody').textContent"
        ".includes('after-the-restart')")
    page.wait_for_selector("#status[data-state='live']")


def test_a_broker_gone_shows_as_an_error(page: Page, tmp_path: Path) -> None:
    config = broker_config(tmp_path, http_enabled=True, http_port=0)
    with Broker.run_in_thread(config) as broker:
        open_live(page, f"{broker.http_url}/")
    page.wait_for_selector("#status[data-state='error']")


def test_a_crowded_supervisor_shows_its_first_rows_then_all(page: Page, url: str,
                                                           broker: RunningBroker) -> None:
    # 120 sessions over 8 shards: some shard holds more than the 12 rows drawn at first.
    raws = [RawClient(broker.host, broker.port) for _ in range(120)]
    try:
        for n, raw in enumerate(raws):
            raw.connect(f"crowd-{n:03}")
        open_live(page, url)
        more = page.locator("#tree text.more").first
        more.wait_for()
        shard = more.get_attribute("data-parent")
        hidden = int((more.text_content() or "").split()[0].lstrip("+"))
        drawn = page.locator(f"g.node[data-path^='{shard}/']").count()
        assert drawn == 12 and hidden > 0
        more.click()
        page.wait_for_function(
            "([shard, count]) => document.querySelectorAll(`g.node[data-path^='${shard}/']`)"
            ".length === count", arg=[shard, drawn + hidden])
        assert page.locator(f"#tree text.more[data-parent='{shard}']").count() == 0
    finally:
        for raw in raws:
            raw.close()


def test_client_ids_are_shown_as_text(page: Page, url: str,
                                      client: Callable[..., Client]) -> None:
    hostile = "<img src=x onerror=window.injected=1>"
    client(hostile)
    open_live(page, url)
    page.wait_for_function(
        "id => document.querySelector('#clients-panel tbody').textContent.includes(id)",
        arg=hostile)
    page.wait_for_function(
        "id => [...document.querySelectorAll('#tree g.node')].some(g => g.dataset.name === id)",
        arg=hostile)
    assert page.locator("#clients-panel img, #sessions-panel img, #tree img").count() == 0
    assert page.evaluate("window.injected") is None


def test_empty_supervisors_are_counted_until_asked_for(page: Page, url: str,
                                                       client: Callable[..., Client]) -> None:
    client("dash-one")
    open_live(page, url)
    page.wait_for_selector(node(page, "dash-one"))
    shards = "g.node.supervisor[data-path^='core/sessions/']"
    # Eight session shards, one holding the client: the other seven are a count.
    assert page.locator(shards).count() == 1
    assert page.locator("#tree text[data-parent='core/sessions']").text_content() == (
        "7 empty supervisors hidden")
    page.uncheck("#tree-hide-empty")
    assert page.locator(shards).count() == 8
    assert page.locator("#tree text[data-parent='core/sessions']").count() == 0
