"""The dashboard's tables in a real browser against a real broker with paho clients:
the search finds what it should and nothing else, a row opens the client's session,
the retained browser follows a filter and its levels, and whatever a client chose
(its id, a payload) is shown as text, never run as markup."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page

from dashboard_testkit import open_live, rows
from mqtt_testkit import Client



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
        # Sorted by a column's head, then the other way (the API lists them ascending).
        head = page.locator(f"#{panel}-panel th[data-key='client_id']")
        head.click()
        head.click()
        assert [row.split("\t")[0] for row in rows(page, panel)] == ["beta-1", "alpha-2", "alpha-1"]
        assert head.get_attribute("data-sort") == "down"


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


def test_client_ids_are_shown_as_text(page: Page, url: str,
                                      client: Callable[..., Client]) -> None:
    hostile = "<img src=x onerror=window.injected=1> a/b#?%"
    client(hostile)
    open_live(page, url)
    page.wait_for_function(
        "id => document.querySelector('#clients-panel tbody').textContent.includes(id)",
        arg=hostile)
    page.wait_for_function(
        "id => [...document.querySelectorAll('#tree g.node')].some(g => g.dataset.name === id)",
        arg=hostile)
    # Its session opens too: the id travels in the URL's path, escaped.
    page.locator("#clients-panel tbody tr", has_text=hostile).click()
    page.wait_for_selector("#client-fields dd[data-key='state']:text-is('online')")
    assert page.inner_text("#client-id") == hostile
    assert page.locator("#clients-panel img, #sessions-panel img, #tree img, #client-panel img"
                        ).count() == 0
    assert page.evaluate("window.injected") is None


def test_a_client_row_opens_its_session(page: Page, url: str,
                                        client: Callable[..., Client]) -> None:
    watcher = client("dash-watcher", clean=False,
                     will=("dash/wills/watcher", b"gone", 1, True))
    watcher.subscribe("dash/+/alerts", qos=1)
    open_live(page, url)
    page.fill("#clients-panel input.search", "dash-watcher")
    page.locator("#clients-panel tbody tr", has_text="dash-watcher").click()
    page.wait_for_selector("#client-subscriptions li")
    assert page.inner_text("#client-id") == "dash-watcher"
    assert page.locator("#client-subscriptions li").all_inner_texts() == ["dash/+/alerts (QoS 1)"]
    assert page.inner_text("#client-fields dd[data-key='will']") == (
        "dash/wills/watcher (QoS 1, retained, 4 bytes)")
    assert page.inner_text("#client-fields dd[data-key='state']") == "online"
    # The panel follows the session: the client leaves, its session stays, offline.
    watcher.disconnect()
    page.wait_for_selector("#client-fields dd[data-key='state']:text-is('offline')")
    page.click("#client-close")
    assert page.is_hidden("#client-panel")
