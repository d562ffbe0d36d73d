"""Shared pytest configuration: every async test runs on asyncio and on trio, and how the
tests are shared out among pytest-xdist's workers (``python -m pytest -n auto``).

A group of tests runs on one worker, in order. Every test module is a group of its own,
so a module-scoped fixture (a server, a checker's run over copies of the package) is set
up once, as in a serial run. Modules that share a session-scoped fixture that is slow to
start are one group (``_GROUPS``). The longest groups are handed out first (``_FIRST``),
so that none starts last and leaves the other workers idle.

The groups are decided here, from the test's module, by a scheduler of our own (xdist's
``pytest_xdist_make_scheduler`` hook), not with ``@pytest.mark.xdist_group``: xdist 3.8
records a marker's group by rewriting an attribute that pytest 9.2 no longer reads, so
under ``--dist loadgroup`` every test went its own way. pyproject's addopts select
``--dist loadgroup``, which this scheduler serves; an explicit ``--dist`` other than that
gets xdist's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci import folded_location

_ROOT = Path(__file__).resolve().parents[1]
# What the tools themselves keep at the root (pytest's cache, mypy's...): no test's leak.
_TOOL_CACHES = frozenset(
    {".hypothesis", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__"}
)


@pytest.fixture(scope="session", autouse=True)
def repository_root_stays_clean() -> Iterator[None]:
    """Fail the run if the repository root gains a file while the tests run.

    A test that opens a database or writes a log at a relative path leaves it in the
    checkout (``s.db`` did once): tests write under their ``tmp_path``. Under xdist each
    worker checks at its own end, so the failure may show on a worker other than the
    culprit's; the names say what to look for.
    """
    before = set(os.listdir(_ROOT))
    yield
    added = sorted(set(os.listdir(_ROOT)) - before - _TOOL_CACHES)
    if added:
        pytest.fail(
            f"the tests left new files at the repository root ({_ROOT}): "
            f"{', '.join(added)}; a test must write under its tmp_path",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A skip for a missing server or binary is reported once per reason (see tests/ci.py)."""
    report: pytest.TestReport = yield
    if report.skipped and isinstance(report.longrepr, tuple):
        folded = folded_location(report.longrepr)
        if folded is not None:
            report.longrepr = folded
    return report


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


# Modules run together, one after the other, on one worker. The LiteLLM proxy (a session
# fixture in tests/host/conftest.py) takes half a minute to a minute to start: its tests
# share one worker, so that it starts once.
_GROUPS: dict[str, str] = {
    "tests/host/test_openai_litellm.py": "litellm",
    "tests/host/test_anthropic_litellm.py": "litellm",
    # A Chromium, a worker and consoles a module: one at a time, so that two browsers do
    # not share two cores with the other tests.
    "tests/console_browser/test_console.py": "console-browser",
    "tests/console_browser/test_screenshots.py": "console-browser",
}

# Groups handed out first, longest first: mypy and pyright over a dozen copies of the
# package, then the LiteLLM proxy and the tests that run the checkers or start worker
# processes (and browsers) again and again. Started late, any of them would leave the
# other workers idle.
_FIRST: tuple[str, ...] = (
    "tests/typing/test_cases_bite.py",
    "tests/dbos/test_kill_anywhere.py",
    "litellm",
    "tests/middleware/test_conversation_long_run.py",
    "tests/strands_parity/test_typing.py",
    "tests/typing/test_declaration_messages.py",
    "tests/host/sessions/test_agent_processes.py",
    "tests/host/sessions/test_crash_points.py",
    "tests/host/sessions/test_processes.py",
    "tests/dbos/test_waits.py",
    "console-browser",
    "tests/dbos/test_local_sqlite.py",
    "tests/dbos/test_replay.py",
    "tests/dbos/test_liveness.py",
    "tests/dbos/test_durable_agent.py",
    "tests/dbos/test_recovery_race.py",
    "tests/dbos/test_database_restart.py",
    "tests/benchmarks/test_durable_scaling.py",
    "tests/dbos/test_client_enqueue.py",
    "tests/dbos/test_multi_worker_example.py",
)


def _group(nodeid: str) -> str:
    """The group of the test *nodeid*: its module's, unless ``_GROUPS`` joins it to others."""
    module = nodeid.split("::", 1)[0]
    return _GROUPS.get(module, module)


def _rank(item: pytest.Item) -> int:
    group = _group(item.nodeid)
    return _FIRST.index(group) if group in _FIRST else len(_FIRST)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering for fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Only on an xdist worker, whose order is the order groups are handed out in: a serial
    # run keeps the order of the files. Stable: within a group the order stays.
    if "PYTEST_XDIST_WORKER" in os.environ:
        items.sort(key=_rank)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scheduler by scope, with ``_group`` as the scope, in the workers' order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no types
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    # Hand the groups out in the order of the collection (see pytest_collection_modifyitems),
    # not biggest first: a group's test count says little about its time.
    config.option.loadscopereorder = False
    return GroupScheduling(config, log)
