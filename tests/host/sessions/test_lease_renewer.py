"""One lease renewer per store: however many sessions run, it renews them all, then ends.

The agent-level tests run every store (memory, SQLite, Postgres); the renewer's own rules
(a dropped lease is not renewed, a lost one is told once, a failing one does not stop the
others, a closing store ends its renewer) are checked with leases of the test's own.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from stageware import Agent, ScriptedModel, SessionLeasedError, ToolContext, tool
from stageware._host._session import AgentSession
from stageware._host.sessions import (
    Escalation,
    MemorySessionStore,
    SessionConflictError,
    SessionError,
    SessionStore,
    SQLiteSessionStore,
    _lease_renewer,
)
from tests.host.agent_helpers import calls
from tests.readme import first_block

from .stores import DelegatingStore

SESSIONS = 12
LEASE = 0.3


def renewer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(_lease_renewer.THREAD_NAME)]


def wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class CountingStore(DelegatingStore):
    """Counts the renewals and escalation look-ups it passes on."""

    def __init__(self, inner: SessionStore) -> None:
        super().__init__(inner)
        self.renewals = 0
        self.escalation_lookups = 0

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        self.renewals += 1
        super().renew(session_id, version=version, owner=owner, lease_seconds=lease_seconds)

    def open_escalation(self, session_id: str) -> Escalation | None:
        self.escalation_lookups += 1
        return super().open_escalation(session_id)


@pytest.mark.anyio
async def test_one_renewer_keeps_every_session_of_a_store_leased(store: SessionStore) -> None:
    assert wait_until(lambda: not renewer_threads())
    inside = 0
    all_inside = anyio.Event()
    release = anyio.Event()

    @tool
    async def slow() -> str:
        """Work that outlasts several leases."""
        nonlocal inside
        inside += 1
        if inside == SESSIONS:
            all_inside.set()
        await release.wait()
        return "done"

    agents = [
        Agent(
            ScriptedModel([calls(("slow", {}, f"t{i}")), "finished"]),
            tools=[slow],
            session_store=store,
            session_id=f"renewed-{i}",
            session_lease=LEASE,
        )
        for i in range(SESSIONS)
    ]
    counted: list[int] = []
    refused: list[str] = []
    async with anyio.create_task_group() as group:
        for agent in agents:
            group.start_soon(agent.invoke_async, "go")
        with anyio.fail_after(10):
            await all_inside.wait()
        counted.append(len(renewer_threads()))
        # Three leases long: only renewals keep the sessions held.
        await anyio.sleep(3 * LEASE)
        counted.append(len(renewer_threads()))
        for i in range(SESSIONS):
            other = Agent(ScriptedModel(["other"]), session_store=store, session_id=f"renewed-{i}")
            try:
                await other.invoke_async("me too")
            except SessionLeasedError:
                refused.append(f"renewed-{i}")
        release.set()

    assert counted == [1, 1]
    assert refused == [f"renewed-{i}" for i in range(SESSIONS)]
    for i in range(SESSIONS):
        stored = store.load(f"renewed-{i}")
        assert stored is not None
        assert stored.lease is None  # released by each final save
    # Nothing is held: the renewer has ended.
    assert wait_until(lambda: not renewer_threads())


def test_each_store_has_its_own_renewer(tmp_path: Path) -> None:
    stores = [MemorySessionStore(), SQLiteSessionStore(tmp_path / "sessions.db")]
    seen: list[set[str]] = []
    barrier = threading.Barrier(len(stores) + 1)

    @tool
    def wait_for_the_others() -> str:
        """Holds its run until every run is inside."""
        barrier.wait(10)
        barrier.wait(10)
        return "done"

    def run(store: SessionStore) -> None:
        Agent(
            ScriptedModel([calls(("wait_for_the_others", {}, "t1")), "finished"]),
            tools=[wait_for_the_others],
            session_store=store,
            session_id="s",
        )("go")

    threads = [threading.Thread(target=run, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    barrier.wait(10)
    seen.append({thread.name for thread in renewer_threads()})
    barrier.wait(10)
    for thread in threads:
        thread.join(10)
    assert seen == [{f"{_lease_renewer.THREAD_NAME} {store!r}" for store in stores}]
    assert wait_until(lambda: not renewer_threads())


@pytest.mark.parametrize("ending", ["answer", "tool error", "cancel", "interrupt"])
def test_the_lease_is_released_and_the_renewer_ends_however_the_run_ends(
    ending: str, tmp_path: Path
) -> None:
    store = CountingStore(SQLiteSessionStore(tmp_path / "sessions.db"))
    agent: Agent
    renewers_seen: list[int] = []

    @tool
    def step(context: ToolContext) -> str:
        """Ends the run the way the test asks, after a renewal."""
        deadline = time.monotonic() + 5
        while store.renewals == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        renewers_seen.append(len(renewer_threads()))
        if ending == "tool error":
            raise RuntimeError("the tool failed")
        if ending == "cancel":
            agent.cancel()
        if ending == "interrupt":
            context.interrupt("approve")
        return "done"

    agent = Agent(
        ScriptedModel([calls(("step", {}, "t1")), "finished"]),
        tools=[step],
        session_store=store,
        session_id="s",
        session_lease=0.15,
    )
    agent("go")

    assert store.renewals > 0
    assert renewers_seen == [1]
    stored = store.inner.load("s")
    assert stored is not None
    assert stored.lease is None
    assert wait_until(lambda: not renewer_threads())
    renewals = store.renewals
    time.sleep(0.2)  # more than a renewal's interval: none happens once released
    assert store.renewals == renewals


def test_a_reused_agent_claims_with_one_write() -> None:
    """The escalation look-up is made only when the agent cannot know the answer."""
    inner = MemorySessionStore()
    store = CountingStore(inner)
    Agent(ScriptedModel(["one"]), session_store=store, session_id="s")("first")
    agent = Agent(ScriptedModel(["two", "three", "four"]), session_store=store, session_id="s")
    agent("second")  # loaded, not created, by this agent: it asks once
    assert store.escalation_lookups == 1
    agent("third")
    agent("fourth")
    assert store.escalation_lookups == 1


# --- The renewer's own rules, with leases of the test's own -----------------------------


class Held:
    """A lease that counts its renewals and can be made to fail."""

    def __init__(
        self, every: float = 0.02, failure: Exception | None = None, skips: int = 0
    ) -> None:
        self.renew_every = every
        self.failure = failure
        self.skips = skips  # the first renewals find the holder busy (a save under way)
        self.renewals = 0
        self.losses = 0

    def renew(self) -> bool:
        self.renewals += 1
        if self.failure is not None:
            raise self.failure
        return self.renewals > self.skips

    def lost(self) -> None:
        self.losses += 1


def test_a_dropped_lease_is_not_renewed_and_the_renewer_ends() -> None:
    store = object()
    held = Held()
    _lease_renewer.hold(store, held)
    assert wait_until(lambda: held.renewals >= 2)
    _lease_renewer.drop(store, held)
    assert wait_until(lambda: not renewer_threads())
    renewals = held.renewals
    time.sleep(0.1)
    assert held.renewals == renewals


def test_a_lost_lease_is_told_once_and_the_others_go_on() -> None:
    store = object()
    lost = Held(
        failure=SessionConflictError("taken", session_id="s", expected_version=1, found_version=2)
    )
    failing = Held(failure=SessionError("the store is down"))
    broken = Held(failure=RuntimeError("a bug in a store"))
    healthy = Held()
    for held in (lost, failing, broken, healthy):
        _lease_renewer.hold(store, held)
    try:
        assert wait_until(lambda: healthy.renewals >= 5 and failing.renewals >= 5)
        assert broken.renewals >= 5  # tried again at each turn, like a store failure
        assert (lost.renewals, lost.losses) == (1, 1)
        assert failing.losses == broken.losses == healthy.losses == 0
        assert len(renewer_threads()) == 1
    finally:
        for held in (failing, broken, healthy):
            _lease_renewer.drop(store, held)
    assert wait_until(lambda: not renewer_threads())


def test_a_skipped_renewal_is_tried_again_soon_not_a_third_of_the_lease_later() -> None:
    store = object()
    held = Held(every=0.6, skips=2)  # two slow saves in a row hold the session
    _lease_renewer.hold(store, held)
    try:
        # Due at 0.6 s, skipped; tried again 0.06 s later, skipped; then renewed, near
        # 0.72 s. Without the retry, the third try came at 1.8 s, with the lease lapsed.
        assert wait_until(lambda: held.renewals >= 3, seconds=1.0)
        time.sleep(0.2)
        assert held.renewals == 3  # renewed: back to a third of the lease
    finally:
        _lease_renewer.drop(store, held)
    assert wait_until(lambda: not renewer_threads())


def test_an_agent_session_reports_a_renewal_skipped_while_it_writes() -> None:
    session = AgentSession(MemorySessionStore(), "s", lease_seconds=30)
    with session._lock:  # pyright: ignore[reportPrivateUsage]  (a save under way)
        assert session.renew() is False
    assert session.renew() is True  # no invocation holds a lease: nothing to renew


def test_a_forked_child_renews_its_own_leases() -> None:
    """Forked while the parent renews a lease on the store and holds the renewers' lock."""
    store = object()
    parents = Held()
    _lease_renewer.hold(store, parents)
    assert wait_until(lambda: parents.renewals >= 1)
    with _lease_renewer._lock:  # pyright: ignore[reportPrivateUsage]
        pid = os.fork()
        if pid == 0:  # the child: a copy of a held lock, and of a renewer with no thread
            code = 1
            try:
                childs = Held()
                _lease_renewer.hold(store, childs)
                code = 0 if wait_until(lambda: childs.renewals >= 3, seconds=3.0) else 2
            finally:
                os._exit(code)
    try:
        deadline = time.monotonic() + 10.0
        while (found := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung holding a lease")
            time.sleep(0.02)
        assert os.waitstatus_to_exitcode(found[1]) == 0  # 2: its lease was never renewed
        renewals = parents.renewals
        assert wait_until(lambda: parents.renewals > renewals)  # the parent's go on
    finally:
        _lease_renewer.drop(store, parents)
    assert wait_until(lambda: not renewer_threads())


class SlowHeld(Held):
    """A lease whose renewal takes a while, like one on a busy database."""

    def renew(self) -> bool:
        time.sleep(0.3)
        return super().renew()


def test_a_renewal_delayed_by_a_slow_one_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    store = object()
    slow, delayed = SlowHeld(every=0.05), Held(every=0.05)
    with caplog.at_level(logging.WARNING, logger=_lease_renewer.__name__):
        _lease_renewer.hold(store, slow)
        _lease_renewer.hold(store, delayed)
        try:
            assert wait_until(lambda: delayed.renewals >= 2)
        finally:
            _lease_renewer.drop(store, slow)
            _lease_renewer.drop(store, delayed)
        assert wait_until(lambda: not renewer_threads())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings
    assert "after it was due, with less than a third of it left" in warnings[0]


def test_renewals_on_time_log_nothing(caplog: pytest.LogCaptureFixture) -> None:
    store = object()
    held = Held(every=0.2)  # a warning would take a renewal 0.2 s late
    with caplog.at_level(logging.WARNING, logger=_lease_renewer.__name__):
        _lease_renewer.hold(store, held)
        assert wait_until(lambda: held.renewals >= 3)
        _lease_renewer.drop(store, held)
        assert wait_until(lambda: not renewer_threads())
    assert caplog.records == []


def test_closing_a_store_ends_its_renewer_before_close_returns(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    held = Held()
    _lease_renewer.hold(store, held)
    assert wait_until(lambda: held.renewals >= 1)
    store.close()
    assert renewer_threads() == []
    renewals = held.renewals
    time.sleep(0.1)
    assert held.renewals == renewals
    # Used again, the store renews again, from a new renewer.
    _lease_renewer.hold(store, held)
    assert wait_until(lambda: held.renewals > renewals)
    _lease_renewer.drop(store, held)
    assert wait_until(lambda: not renewer_threads())


# --- The sessions guide's example -----------------------------------------------------------------


def readme_sqlite_example() -> str:
    return first_block("## Sessions across workers\n", "SQLite keeps its connections open")


def test_the_readme_sqlite_example_leaves_nothing_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"model": ScriptedModel(["Hello there."])}
    exec(readme_sqlite_example(), namespace)

    assert capsys.readouterr().out == "Hello there.\n"
    assert renewer_threads() == []
    # The last connection closed wrote the log back into the file and deleted it.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sessions.db"]
    stored = SQLiteSessionStore(tmp_path / "sessions.db").load("u42")
    assert stored is not None
    assert stored.lease is None
    assert [m["role"] for m in stored.snapshot["messages"]] == ["user", "assistant"]
