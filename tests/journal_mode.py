"""Running a test folder with a journal current: ``STAGEWARE_TEST_JOURNAL=memory``.

A folder's conftest imports :func:`journaled` (an autouse fixture) and
:func:`pytest_configure` (which registers the ``no_journal`` marker). With the variable
set, every test of the folder runs as a durable invocation runs it: each model and tool
call a step of a ``MemoryJournal`` (``tests/host/journal_helpers.py``), recording only, so
that what the host does around the steps (hooks, middleware, policies, sessions) is tested
with the journal's code path switched on; a replay is what the ``test_journal_*`` modules
test. Without the variable nothing changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.ci import skip_folded

__all__ = ["journaled", "pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "no_journal: the test checks what differs under a journal by design (the session "
        "store's saves: no per-message checkpoints, the final save's released_by; see each "
        "test for others); skipped with STAGEWARE_TEST_JOURNAL=memory",
    )


@pytest.fixture(autouse=True)
def journaled(request: pytest.FixtureRequest) -> Iterator[None]:
    """With ``STAGEWARE_TEST_JOURNAL=memory``, the test runs with a journal current."""
    if os.environ.get("STAGEWARE_TEST_JOURNAL") != "memory":
        yield
        return
    if request.node.get_closest_marker("no_journal") is not None:
        skip_folded("checks what differs under a journal by design")
    from stageware._host._journal import journal_scope
    from tests.host.journal_helpers import MemoryJournal

    with journal_scope(MemoryJournal("test")):
        yield
