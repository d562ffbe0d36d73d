"""An agent's session in PostgreSQL through a restart, a lock and a stall.

However a run ends (its answer, an error, a cancellation, a final save that failed), its
lease is let go, so that the next worker need not wait for it to lapse: each test ends
with another agent, with a lease of its own, running on the session at once. The server
is restarted mid-run (every pooled connection dies), and the final save still lands.
A store call the server does not answer ends within its bound under ``agent.cancel()``
and under the caller's ``anyio.fail_after``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Generator, Iterator

import anyio
import psycopg
import pytest
from psycopg import sql

from stageware import (
    Agent,
    ScriptedModel,
    ScriptedTurn,
    SessionError,
    SessionTimeoutError,
    tool,
)
from stageware.postgres import PostgresSessionStore
from tests.host.agent_helpers import calls, stored_snapshot

from .private_server import BOUND, PrivateServer, bounded_store

SESSION = "u42"


@pytest.fixture
def store(private_postgres: PrivateServer) -> Iterator[PostgresSessionStore]:
    with bounded_store(private_postgres) as store:
        yield store


def _another_worker_runs_at_once(server: PrivateServer, store: PostgresSessionStore) -> None:
    """Another agent (another owner, a lease of 30 s) claims the session and runs."""
    with PostgresSessionStore(server.url, schema=store.schema) as other:
        agent = Agent(ScriptedModel(["next"]), session_store=other, session_id=SESSION)
        assert agent("and now?").stop_reason == "end_turn"


def _tool_results(store: PostgresSessionStore) -> list[str]:
    return [
        block["toolResult"]["content"][0].get("text", "")
        for message in stored_snapshot(store, SESSION)["messages"]
        for block in message["content"]
        if "toolResult" in block
    ]


def _agent_with(
    store: PostgresSessionStore, turns: list[ScriptedTurn | str], action: Callable[[Agent], None]
) -> Agent:
    """An agent whose tool ``act`` does *action* to the run (a restart, a cancel, ...)."""
    holder: list[Agent] = []

    @tool
    def act() -> str:
        """Do the test's action."""
        action(holder[0])
        return "acted"

    agent = Agent(ScriptedModel(turns), tools=[act], session_store=store, session_id=SESSION)
    holder.append(agent)
    return agent


_ACT = calls(("act", {}, "t1"))


def test_a_run_whose_server_restarted_saves_its_turn_and_lets_the_lease_go(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    agent = _agent_with(store, [_ACT, "done"], lambda _: private_postgres.restart())

    result = agent("go")

    assert result.stop_reason == "end_turn"
    assert _tool_results(store) == ["acted"]
    _another_worker_runs_at_once(private_postgres, store)


def test_a_run_that_failed_after_a_restart_lets_the_lease_go(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    failing = ScriptedTurn(error=RuntimeError("the model is down"))
    agent = _agent_with(store, [_ACT, failing], lambda _: private_postgres.restart())

    with pytest.raises(RuntimeError, match="the model is down"):
        agent("go")

    assert _tool_results(store) == ["acted"]
    _another_worker_runs_at_once(private_postgres, store)


def test_a_run_cancelled_after_a_restart_lets_the_lease_go(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    def restart_and_cancel(agent: Agent) -> None:
        private_postgres.restart()
        agent.cancel()

    agent = _agent_with(store, [_ACT, "never asked"], restart_and_cancel)

    assert agent("go").stop_reason == "cancelled"
    _another_worker_runs_at_once(private_postgres, store)


def _hold_the_session_row(url: str, schema: str, seconds: float) -> threading.Thread:
    """Hold the session's row lock for *seconds*, from another connection."""
    locked = threading.Event()

    def hold() -> None:
        with psycopg.connect(url) as connection, connection.transaction():
            lock = sql.SQL("SELECT 1 FROM {} WHERE session_id = %s FOR UPDATE")
            connection.execute(lock.format(sql.Identifier(schema, "sessions")), (SESSION,))
            locked.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(10)
    return thread


def test_a_failed_final_save_still_lets_the_lease_go_by_trying_again(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    """The final save meets a row lock and fails; the lease is let go once the lock goes.

    The lock outlasts the save (0.8 s of lock_timeout) and the first try to let the lease
    go (0.8 s more), and goes before the second try gives up.
    """
    holders: list[threading.Thread] = []

    def lock_the_row(_: Agent) -> None:
        holders.append(_hold_the_session_row(private_postgres.url, store.schema, 2.2))

    agent = _agent_with(store, [_ACT, "done"], lock_the_row)

    with pytest.raises(SessionTimeoutError, match="lock_timeout"):
        agent("go")

    holders[0].join()
    _another_worker_runs_at_once(private_postgres, store)


# --- A claim held by a lock or a stalled server ---------------------------------------------


@contextlib.contextmanager
def _held(
    cause: str, store: PostgresSessionStore, server: PrivateServer
) -> Generator[None, None, None]:
    """The session's row locked by another connection, or the whole server stalled."""
    if cause == "stalled server":
        with server.stalled():
            yield
        return
    holder = _hold_the_session_row(server.url, store.schema, 2 * BOUND)
    try:
        yield
    finally:
        holder.join()


_CAUSES = pytest.mark.parametrize(
    ("cause", "problem"),
    [("row lock", "lock_timeout"), ("stalled server", "did not answer")],
)


def _stored_session(store: PostgresSessionStore) -> Agent:
    """An agent on a session that a first run saved (so that it has a row to lock)."""
    Agent(ScriptedModel(["first"]), session_store=store, session_id=SESSION)("hello")
    return Agent(ScriptedModel(["never"]), session_store=store, session_id=SESSION)


@_CAUSES
def test_agent_cancel_ends_a_held_claim_within_the_bound(
    store: PostgresSessionStore, private_postgres: PrivateServer, cause: str, problem: str
) -> None:
    agent = _stored_session(store)
    errors: list[BaseException] = []
    ended = threading.Event()

    def run() -> None:
        try:
            agent("go")
        except BaseException as error:  # handed to the test's thread
            errors.append(error)
        ended.set()

    with _held(cause, store, private_postgres):
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(0.2)
        cancelled = time.monotonic()
        agent.cancel()
        assert ended.wait(BOUND), "the run went on past the bound after cancel()"
        elapsed = time.monotonic() - cancelled
    worker.join()

    assert elapsed < BOUND
    assert len(errors) == 1
    assert isinstance(errors[0], SessionTimeoutError)
    # A stalled server holds the claim's first call (the escalation lookup), a lock its save.
    assert "session 'u42' in postgresql://" in str(errors[0])
    assert problem in str(errors[0])


@_CAUSES
def test_fail_after_ends_a_run_whose_claim_is_held(
    store: PostgresSessionStore, private_postgres: PrivateServer, cause: str, problem: str
) -> None:
    agent = _stored_session(store)

    async def run() -> None:
        with anyio.fail_after(0.2):
            await agent.invoke_async("go")

    with _held(cause, store, private_postgres):
        started = time.monotonic()
        with pytest.raises((TimeoutError, SessionError)) as raised:
            anyio.run(run)
        elapsed = time.monotonic() - started

    assert elapsed < BOUND, f"the run held the caller's deadline for {elapsed:.2f} s"
    if isinstance(raised.value, SessionError):
        assert problem in str(raised.value)
