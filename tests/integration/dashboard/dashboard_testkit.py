"""Helpers for the dashboard's browser tests: the page's rows and the tree's kill."""

from __future__ import annotations

from playwright.sync_api import Page



def node(page: Page, name: str) -> str:
    return f"g.node[data-name='{name}']"


def open_live(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#status[data-state='live']")


def rows(page: Page, panel: str) -> list[str]:
    return [text for text in page.locator(f"#{panel}-panel tbody tr").all_inner_texts()]


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
