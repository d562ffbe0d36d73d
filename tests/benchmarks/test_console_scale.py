"""The console at scale: with 10,000 pending approvals, each listing page loads in time.

The store is filled as the ledger's benchmark fills it (through saves: 500 sessions, 20
approvals each), then the console's pages are timed end to end through the app (the
store's page, the views, the templates): the first page with the total, a filtered page,
and the 200th page, reached by following the pages' own "Next page" links. Each must load
in under a second (the issue's bound); the measured figures are printed. The pages are
timed once the app has served one request, which compiles its templates (once a process).
"""

from __future__ import annotations

import re
import time
from html import unescape
from pathlib import Path

import httpx2 as httpx

from stageware import SQLiteSessionStore
from tests.console.desk import Browser

from .test_approval_ledger import BOUND, PAGE, PENDING, SESSIONS, fill


def timed(browser: Browser, path: str) -> tuple[httpx.Response, float]:
    start = time.perf_counter()
    response = browser.get(path)
    return response, time.perf_counter() - start


def next_link(html: str) -> str | None:
    found = re.search(r'<a id="next-page" href="([^"]+)"', html)
    return None if found is None else unescape(found.group(1))


def test_the_console_pages_10000_pending_approvals_in_time(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "ledger.db")
    try:
        fill(store)
        browser = Browser(store, page_size=PAGE)
        assert browser.get("/approvals?hook=none").status_code == 200

        first, first_seconds = timed(browser, "/approvals")
        assert first.status_code == 200
        assert f'<span id="total">{PENDING}</span>' in first.text
        assert first.text.count('<tr class="approval"') == PAGE
        filtered, filtered_seconds = timed(
            browser, "/approvals?hook=model.before&middleware=guard1&older_than=0"
        )
        assert f'<span id="total">{SESSIONS * 2}</span>' in filtered.text
        link = next_link(first.text)
        for _ in range(198):
            assert link is not None
            link = next_link(browser.get(link).text)
        assert link is not None
        last, last_seconds = timed(browser, link)
        assert last.text.count('<tr class="approval"') == PAGE
        assert next_link(last.text) is None
        assert f'data-session-id="session-{SESSIONS - 1:04d}"' in last.text
    finally:
        store.close()
    figures = (
        f"console on SQLite, {PENDING:,} pending approvals: first page "
        f"{first_seconds * 1000:.1f} ms, filtered page {filtered_seconds * 1000:.1f} ms, "
        f"200th page {last_seconds * 1000:.1f} ms (bound {BOUND:.0f} s)"
    )
    print(figures)
    assert max(first_seconds, filtered_seconds, last_seconds) < BOUND, figures
