"""Screenshots of the console's main pages, for the docs, taken from a real deployment.

    python -m tests.console_browser.screenshots [FOLDER]

writes ``console-approvals.png`` (the pending approvals), ``console-approval.png`` (one
approval: what runs if approved, the conversation, the reason, the answer form) and
``console-audit.png`` (the decisions, with who made them) into FOLDER, by default
``docs/images``. A worker (``worker.py``) runs refund requests that wait for finance;
dana, of finance, approves one and denies another in the browser first, so that the
audit has entries. The window's size is fixed (``browser.WINDOW``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Final

from selenium import webdriver
from selenium.webdriver.common.by import By

from .browser import chromium, until
from .deployment import ROOT, Console, Deployment
from .pages import open_approval

NAMES: Final = ("console-approvals.png", "console-approval.png", "console-audit.png")
DEFAULT_FOLDER: Final = ROOT / "docs" / "images"
ORDERS: Final = ("order-2001", "order-2002", "order-2003", "order-2004", "order-2005")


def _answer(
    browser: webdriver.Chrome, console: Console, order: str, button: str, comment: str
) -> None:
    open_approval(browser, console, order)
    browser.find_element(By.CSS_SELECTOR, "#answer textarea[name=comment]").send_keys(comment)
    browser.find_element(By.ID, button).click()
    until(browser, lambda b: b.find_element(By.ID, "outcome"))


def take(folder: Path) -> list[Path]:
    """Take the screenshots into *folder* (made if missing); their paths, as ``NAMES``."""
    folder.mkdir(parents=True, exist_ok=True)
    shots = [folder / name for name in NAMES]
    browser = chromium()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="stageware-console-") as work,
            Deployment.started(Path(work)) as deployment,
        ):
            dana = deployment.console("dana", ("finance",))
            for order in ORDERS:
                deployment.request_refund(order)
            _answer(browser, dana, ORDERS[0], "approve", "the courier confirmed the damage")
            _answer(browser, dana, ORDERS[1], "deny", "already refunded by card")
            deployment.result(ORDERS[0])
            deployment.result(ORDERS[1])

            browser.get(f"{dana.url}/approvals")
            browser.save_screenshot(shots[0])
            open_approval(browser, dana, ORDERS[2])
            browser.save_screenshot(shots[1])
            browser.get(f"{dana.url}/audit")
            browser.save_screenshot(shots[2])
    finally:
        browser.quit()
    return shots


def main(arguments: list[str]) -> None:
    folder = Path(arguments[0]) if arguments else DEFAULT_FOLDER
    for shot in take(folder):
        print(shot)


if __name__ == "__main__":
    main(sys.argv[1:])
