"""Debian's Chromium, headless, driven by Selenium through Debian's ``chromedriver``.

Both binaries are the system's (``apt-get install chromium chromium-driver``; ``.ci/run``
installs them): their paths are given to Selenium, so that Selenium Manager never looks
for, or downloads, a browser or a driver. Without them the tests skip, and fail when
``CI`` is set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Final, TypeVar

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.wait import WebDriverWait

from tests.ci import skip_or_fail

from .deployment import BOUND

_T = TypeVar("_T")

WINDOW: Final = (1280, 800)
"""The page's viewport, fixed so that the screenshots come out the same size every time."""

HOW_TO_INSTALL: Final = (
    "the console's browser tests need Debian's Chromium and its driver on the PATH "
    "(chromium, chromedriver): apt-get install chromium chromium-driver"
)


def _binary(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


def chromium() -> webdriver.Chrome:
    """A new headless Chromium, its viewport ``WINDOW``; skip (or fail in CI)
    without the binaries."""
    browser = _binary("chromium", "chromium-browser")
    driver = _binary("chromedriver")
    if browser is None or driver is None:
        skip_or_fail(HOW_TO_INSTALL)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in (
        "--headless=new",
        # Containers give /dev/shm 64 MB, which Chromium's renderers outgrow.
        "--disable-dev-shm-usage",
        # No calls home: the tests run without network.
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    # The page's console messages, where Chromium reports what a page's policy blocked.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if os.geteuid() == 0:
        # Chromium refuses to start its sandbox as root (CI's containers run as root).
        options.add_argument("--no-sandbox")
    started = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    started.set_page_load_timeout(30)
    # The viewport itself, not the window (whose frame takes a share that varies).
    width, height = WINDOW
    started.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    return started


def loaded(browser: webdriver.Chrome) -> bool:
    """Whether the document the browser shows has loaded."""
    state: str = browser.execute_script("return document.readyState")
    return state == "complete"


def until(browser: webdriver.Chrome, condition: Callable[[webdriver.Chrome], _T]) -> _T:
    """The first true value of *condition*, asked of each loaded page until ``BOUND``.

    An element missing, or gone stale because a form's answer replaced its page while it
    was read, counts as not yet.
    """
    ignored = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(browser, BOUND, ignored_exceptions=ignored)
    return wait.until(lambda b: loaded(b) and condition(b))


def policy_violations(browser: webdriver.Chrome) -> list[str]:
    """What the pages' Content-Security-Policy blocked since the last call, as Chromium
    reported it to the page's console."""
    logged = browser.get_log("browser")  # type: ignore[no-untyped-call]  # selenium leaves it untyped
    messages: list[str] = [entry["message"] for entry in logged]
    return [message for message in messages if "Content Security Policy" in message]
