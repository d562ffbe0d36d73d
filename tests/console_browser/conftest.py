"""Fixtures: one deployment a module (the worker, and consoles for dana, of finance, and for
eve, of support), one headless Chromium a module; each ended and reaped afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver

from .browser import chromium
from .deployment import Console, Deployment


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    # Started first: without Chromium the tests skip before any process is started.
    started = chromium()
    try:
        yield started
    finally:
        started.quit()


@pytest.fixture(scope="module")
def deployment(
    browser: webdriver.Chrome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with Deployment.started(tmp_path_factory.mktemp("deployment")) as started:
        yield started


@pytest.fixture(scope="module")
def dana(deployment: Deployment) -> Console:
    """The console as dana, who holds the role the refunds' approvals name."""
    return deployment.console("dana", ("finance",))


@pytest.fixture(scope="module")
def eve(deployment: Deployment) -> Console:
    """The console as eve, of support: she may read, not answer."""
    return deployment.console("eve", ("support",))
