"""Fixtures: one headless Chromium a module, and one deployment a module and backend (the
worker, and consoles for dana, of finance, and for eve, of support); each ended and
reaped afterwards.

The deployment runs on SQLite files, then on a PostgreSQL database of its own on the
test server (``STAGEWARE_TEST_POSTGRES_URL``; without it that case skips, and fails when
``CI`` is set): the sessions in a schema, DBOS's tables beside them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver

from tests.ci import skip_or_fail
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, StoreSpec, fresh_database, postgres_url

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


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def deployment(
    request: pytest.FixtureRequest,
    browser: webdriver.Chrome,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp(f"deployment-{request.param}")
    if request.param == "sqlite":
        with Deployment.started(folder) as started:
            yield started
        return
    with fresh_database(postgres_url() or skip_or_fail(HOW_TO_RUN_POSTGRES)) as database:
        store = StoreSpec("postgres", database, "sessions")
        with Deployment.started(folder, store, dbos_url=database) as started:
            yield started


@pytest.fixture(scope="module")
def dana(deployment: Deployment) -> Console:
    """The console as dana, who holds the role the refunds' approvals name."""
    return deployment.console("dana", ("finance",))


@pytest.fixture(scope="module")
def eve(deployment: Deployment) -> Console:
    """The console as eve, of support: she may read, not answer."""
    return deployment.console("eve", ("support",))
