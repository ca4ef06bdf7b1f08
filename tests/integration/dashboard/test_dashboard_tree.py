"""The dashboard's supervision tree in a real browser against a real broker: a kill
from the tree shows as a restart (the count goes up, the row and its supervisor
flash), a declined kill kills nothing, the root is refused with the reason, the page
lives through a core restart, crowded and empty supervisors are summarised."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page

from actorbroker.app import RunningBroker

from dashboard_testkit import kill_from_the_tree, node, open_live
from mqtt_testkit import Client, RawClient



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
