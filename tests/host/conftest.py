"""Fixtures shared by the adapters' tests: the LiteLLM proxy, started once per session.

Besides ``MOCK_MODELS`` it serves ``via-upstream``, forwarded to ``litellm_upstream``, a
fake OpenAI-compatible server whose replies a test scripts (tool calls, say).

Without the ``litellm-proxy`` extra the tests that use it skip, saying how to install it;
when ``CI`` is set they fail instead, so CI never passes without having run them.

And the journal mode (``tests/journal_mode``). The agent's behaviour tests
(``tests/host/test_agent_*.py``) run twice, ``plain`` and ``dbos`` (every Agent run
durably on DBOS); see ``agent_mode`` below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.ci import skip_or_fail
from tests.journal_mode import journaled, pytest_configure

from .fake_openai_server import FakeOpenAIServer
from .litellm_proxy import (
    HOW_TO_RUN_LITELLM,
    MOCK_MODELS,
    LiteLLMProxy,
    litellm_executable,
    upstream_model,
)

__all__ = ["journaled", "litellm_proxy", "litellm_upstream", "pytest_configure"]


@pytest.fixture(scope="session")
def litellm_upstream() -> Iterator[FakeOpenAIServer]:
    """The provider behind the proxy's ``via-upstream`` model; tests queue its replies."""
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def litellm_proxy(
    tmp_path_factory: pytest.TempPathFactory, litellm_upstream: FakeOpenAIServer
) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy on loopback, for every test of the session."""
    executable = litellm_executable()
    if executable is None:
        skip_or_fail(HOW_TO_RUN_LITELLM)
    models = [*MOCK_MODELS, upstream_model("via-upstream", litellm_upstream.base_url)]
    proxy = LiteLLMProxy.start(executable, models, tmp_path_factory.mktemp("litellm"))
    yield proxy
    proxy.stop()


# -- the agent tests, with and without DBOS ---------------------------------------------
#
# The issue: "the existing host tests pass with the integration switched on". Every test
# of the agent's behaviour (tests/host/test_agent_*.py) runs twice: ``plain``, and
# ``dbos``, where every Agent the test builds runs its invocations as DBOS workflows
# (stageware.dbos.run_durably), each model and tool call a checkpointed step.


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    path = metafunc.definition.path
    # Not tests/host/sessions' test_agent_* modules: they test the per-message checkpoints
    # and save counts that a durable run leaves to its journal (the durable-runs guide's "one
    # truth");
    # tests/host/test_journal_*.py and tests/dbos test the saves a durable run makes.
    if (
        "agent_mode" in metafunc.fixturenames
        and path.name.startswith("test_agent_")
        and path.parent.name == "host"
    ):
        metafunc.parametrize("agent_mode", ["plain", "dbos"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # DBOS runs workflows on asyncio only: a test on trio runs plain, once, so the dbos
    # copy of a trio case is left out (deselected, not skipped: there is nothing to run).
    left_out = [item for item in items if _dbos_on_trio(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not _dbos_on_trio(item)]


def _dbos_on_trio(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    params: dict[str, object] = callspec.params
    return params.get("agent_mode") == "dbos" and params.get("anyio_backend") == "trio"


@pytest.fixture
def agent_mode() -> str:
    """``plain`` outside the agent tests (which parametrize it)."""
    return "plain"


@pytest.fixture(scope="module")
def dbos_launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on an SQLite system database, launched once per test module.

    Not once per test process: under xdist a worker runs modules of tests/dbos too, which
    launch DBOS themselves, and a process has one DBOS at a time.
    """
    dbos = pytest.importorskip("stageware.dbos", reason="the dbos mode needs the dbos extra")
    from sqlalchemy import create_engine, event

    url = f"sqlite:///{tmp_path_factory.mktemp('dbos') / 'system.sqlite'}"
    engine = create_engine(url)

    def settings(connection: Any, record: object) -> None:
        # What DBOS sets on the engine it makes itself (writers serialised, a busy
        # timeout, foreign keys), and then speed over durability: a test's database
        # outlives no crash, and commits that wait for the disk made the dbos half of
        # the agent tests take twice as long (59 s against 30 s, measured).
        connection.isolation_level = "IMMEDIATE"
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=OFF")

    event.listen(engine, "connect", settings)

    dbos.launch(
        name="stageware-host-tests",
        database_url=url,
        config={
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.01,
            "system_database_engine": engine,
        },
    )
    yield
    dbos.shutdown()
    engine.dispose()


@pytest.fixture(autouse=True)
def _agents_in_mode(
    agent_mode: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In ``dbos`` mode, every Agent built during the test runs durably."""
    if agent_mode != "dbos":
        return
    request.getfixturevalue("dbos_launched")
    from stageware import Agent
    from stageware.dbos import run_durably

    built = Agent.__init__

    def durable_init(self: Agent, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        # A test's trio agent stays plain: DBOS runs on asyncio only.
        if kwargs.get("backend", "asyncio") == "asyncio":
            run_durably(self)

    monkeypatch.setattr(Agent, "__init__", durable_init)
