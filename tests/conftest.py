"""Shared pytest configuration: every async test runs on asyncio and on trio, and how the
tests are shared out among pytest-xdist's workers (``python -m pytest -n auto``).

pyproject's addopts select ``--dist loadgroup``: a group of tests runs on one worker, in
order. Every test module is a group of its own, so a module-scoped fixture (a server, a
checker's run over copies of the package) is set up once, as in a serial run; a test may
still name a group of its own with ``@pytest.mark.xdist_group(name)``. Tests that share a
session-scoped fixture that is slow to start, and tests that must not run beside each
other, are one group (``_GROUPS``). The heavy groups are handed out first
(``--no-loadscope-reorder`` keeps this order), so that no long group starts last and
leaves the other worker idle.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


# A session-scoped fixture that costs too much to start on every worker: the tests that use
# it are one group. The LiteLLM proxy takes half a minute to a minute to start.
_FIXTURE_GROUPS: dict[str, str] = {
    "litellm_proxy": "litellm",
    "litellm_upstream": "litellm",
}

# Modules run together in one group, one after the other, on one worker.
_GROUPS: dict[str, str] = {}

# Groups handed out first, longest first: mypy and pyright over a dozen copies of the
# package, then the LiteLLM proxy (a minute to start) and the tests that start worker
# processes or servers again and again. Started late, any of them would leave the other
# workers idle at the end.
_FIRST: tuple[str, ...] = (
    "tests/typing/test_cases_bite.py",
    "litellm",
    "tests/strands_parity/test_typing.py",
    "tests/typing/test_declaration_messages.py",
    "tests/host/sessions/test_agent_processes.py",
    "tests/host/sessions/test_crash_points.py",
    "tests/host/sessions/test_processes.py",
)


def _group(item: pytest.Item) -> str:
    for fixture, group in _FIXTURE_GROUPS.items():
        if fixture in getattr(item, "fixturenames", ()):
            return group
    module = item.nodeid.split("::", 1)[0]
    return _GROUPS.get(module, module)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Only on an xdist worker: a serial run keeps its order and its node ids.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    groups: dict[pytest.Item, str] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = _group(item)
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item] = group

    def rank(item: pytest.Item) -> int:
        group = groups.get(item)
        return _FIRST.index(group) if group in _FIRST else len(_FIRST)

    items.sort(key=rank)  # stable: the order within a group and among the rest is kept
