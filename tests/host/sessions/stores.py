"""How the store tests reach a database, the snapshots they save, and store doubles.

A ``StoreSpec`` names one database (a memory store, an SQLite file, a Postgres schema);
``open_store(spec)`` makes a store on it. Two stores opened from one spec are what two
processes would have: separate connections to the same data. A spec travels to a worker
process as JSON (``worker.py``).

Postgres: the tests find the server through ``STAGEWARE_TEST_POSTGRES_URL``. Each test
gets a schema of its own, so runs and tests never see each other's sessions.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from stageware._host.sessions import (
    SNAPSHOT_VERSION,
    ApprovalEntry,
    ApprovalPage,
    ApprovalStatus,
    Escalation,
    EscalationPage,
    EscalationStatus,
    MemorySessionStore,
    SessionSnapshot,
    SessionStore,
    SQLiteSessionStore,
    StoredSession,
)

POSTGRES_URL_VARIABLE: Final = "STAGEWARE_TEST_POSTGRES_URL"

# One reason for every test that needs the server, so that a run without one reports them
# all on one line (tests/ci.py).
HOW_TO_RUN_POSTGRES: Final = (
    f"the PostgreSQL tests need a server: set {POSTGRES_URL_VARIABLE}="
    "postgresql://USER@HOST/DATABASE (the tests create and drop schemas and databases in "
    "it), or let a throwaway server be started for them: "
    ".ci/postgres run python -m pytest tests/host/sessions"
)

Kind = Literal["memory", "sqlite", "postgres"]


@dataclass(frozen=True)
class StoreSpec:
    """Where a store's sessions live.

    Attributes:
        kind: Which store.
        target: The SQLite file, or the Postgres URL; empty for memory.
        schema: The Postgres schema; empty otherwise.
    """

    kind: Kind
    target: str = ""
    schema: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        return cls(**json.loads(text))


def open_store(spec: StoreSpec) -> SessionStore:
    """A new store on *spec*'s database (for memory, a new, empty store)."""
    if spec.kind == "memory":
        return MemorySessionStore()
    if spec.kind == "sqlite":
        return SQLiteSessionStore(spec.target)
    from stageware.postgres import PostgresSessionStore

    # 10 s, not the default 1 s: the tests share one server with the DBOS process tests,
    # which create and drop databases and start workers by the dozen; under that load a
    # plain listing once ran past 1 s in CI. The tests of the bound make stores of their own.
    return PostgresSessionStore(spec.target, schema=spec.schema, statement_timeout=10.0)


def close_store(store: SessionStore) -> None:
    close: Callable[[], None] | None = getattr(store, "close", None)
    if close is not None:
        close()


def load_stored(spec: str, session_id: str) -> StoredSession:
    """The session as worker processes left it, read through a store of the test's own.

    Args:
        spec: The ``StoreSpec`` as JSON, as the workers were given it.
    """
    store = open_store(StoreSpec.from_json(spec))
    try:
        stored = store.load(session_id)
    finally:
        close_store(store)
    assert stored is not None
    return stored


def fresh_schema_name() -> str:
    return f"stageware_test_{uuid.uuid4().hex[:12]}"


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_URL_VARIABLE) or None


def with_database(url: str, name: str) -> str:
    """*url* with its database replaced by *name*, in the form it was given."""
    if "://" in url:
        parts = urlsplit(url)
        return urlunsplit(parts._replace(path="/" + quote(name)))
    from psycopg.conninfo import make_conninfo

    return make_conninfo(url, dbname=name)


@contextlib.contextmanager
def fresh_database(url: str, prefix: str = "stageware_test") -> Generator[str]:
    """A new database on *url*'s server, its URL; dropped at the end with its connections,
    and with the system database DBOS makes beside it when given no other (``_dbos_sys``).
    """
    import psycopg
    from psycopg import sql

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            for dropped in (name, f"{name}_dbos_sys"):
                drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                connection.execute(drop.format(sql.Identifier(dropped)))


def make_snapshot(turn: int = 0) -> SessionSnapshot:
    """A snapshot with every kind of field, and text the databases find awkward."""
    return {
        "version": SNAPSHOT_VERSION,
        "messages": [
            {"role": "user", "content": [{"text": f"question {turn}"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "let me check"},
                    {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"q": [1, 2.5]}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "success",
                            "content": [{"json": {"when": "2024-01-01", "ok": True}}],
                        }
                    }
                ],
            },
        ],
        # A lone surrogate and a NUL: valid in a Python str, refused by Postgres in text
        # and in jsonb unless the store escapes them.
        "state": {"turn": turn, "nested": {"list": [None, "é", "\ud800", "a\x00b"]}},
        "model_state": {"response_id": "r-1"},
        "interrupt_state": {"pending": [{"id": "i1", "name": "approve", "reason": None}]},
    }


def escalate(
    store: SessionStore, session_id: str, queue: str = "refunds", **changes: Any
) -> Escalation:
    """*session_id* saved as a fresh session with an open escalation of a refund (fields as
    *changes* say), as a run that escalated leaves it."""
    escalation = Escalation.new(
        session_id,
        queue=queue,
        hook="tool.before",
        middleware="refund_limit",
        reason=f"a refund for {session_id} is over the limit",
        event={"amount": 900},
    )
    escalation = replace(escalation, **changes)
    store.save(
        session_id,
        make_snapshot(),
        expected_version=0,
        owner="worker",
        lease_seconds=None,
        escalation=escalation,
    )
    return escalation


def counter_snapshot(count: int, log: list[str] | None = None) -> SessionSnapshot:
    """A snapshot that keeps a counter, and a log of who counted, in its state."""
    return {
        "version": SNAPSHOT_VERSION,
        "messages": [],
        "state": {"count": count, "log": log or []},
        "model_state": {},
        "interrupt_state": {},
    }


def run_threads(count: int, work: Callable[[int], None]) -> None:
    """Run *work(index)* on *count* threads that start together; re-raise any failure."""
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait()
            work(index)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class DelegatingStore:
    """A store that passes every call to *inner*; the test doubles below change one."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner

    def load(self, session_id: str) -> StoredSession | None:
        return self.inner.load(session_id)

    def save(
        self,
        session_id: str,
        snapshot: SessionSnapshot,
        *,
        expected_version: int,
        owner: str,
        lease_seconds: float | None,
        escalation: Escalation | None = None,
        kept_messages: int = 0,
    ) -> int:
        version = self.inner.save(
            session_id,
            snapshot,
            expected_version=expected_version,
            owner=owner,
            lease_seconds=lease_seconds,
            escalation=escalation,
            kept_messages=kept_messages,
        )
        self.saved(snapshot, lease_seconds=lease_seconds, kept_messages=kept_messages)
        return version

    def saved(
        self, snapshot: SessionSnapshot, *, lease_seconds: float | None, kept_messages: int
    ) -> None:
        """Called once the inner store has committed a save of *snapshot*: the doubles
        that act after a save (record it, stall, kill the process) override this."""

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        self.inner.renew(session_id, version=version, owner=owner, lease_seconds=lease_seconds)

    def delete(self, session_id: str) -> None:
        self.inner.delete(session_id)

    def session_ids(self) -> list[str]:
        return self.inner.session_ids()

    def open_escalation(self, session_id: str) -> Escalation | None:
        return self.inner.open_escalation(session_id)

    def escalation(self, escalation_id: str) -> Escalation | None:
        return self.inner.escalation(escalation_id)

    def escalations(
        self, queue: str | None = None, *, status: EscalationStatus | None = None
    ) -> list[Escalation]:
        return self.inner.escalations(queue, status=status)

    def escalation_page(
        self,
        queue: str | None = None,
        *,
        status: EscalationStatus | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
        newest_first: bool = False,
    ) -> EscalationPage:
        return self.inner.escalation_page(
            queue,
            status=status,
            created_before=created_before,
            limit=limit,
            after=after,
            newest_first=newest_first,
        )

    def approvals(
        self,
        *,
        status: ApprovalStatus | Literal["answered"] | None = "pending",
        hook: str | None = None,
        middleware: str | None = None,
        session_id: str | None = None,
        asked_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> ApprovalPage:
        return self.inner.approvals(
            status=status,
            hook=hook,
            middleware=middleware,
            session_id=session_id,
            asked_before=asked_before,
            limit=limit,
            after=after,
        )

    def approval(self, session_id: str, interrupt_id: str) -> ApprovalEntry | None:
        return self.inner.approval(session_id, interrupt_id)

    def claim_escalation(self, escalation_id: str, *, by: str) -> Escalation:
        return self.inner.claim_escalation(escalation_id, by=by)

    def resolve_escalation(
        self,
        escalation_id: str,
        *,
        by: str,
        resolution: str,
        comment: str | None = None,
        take_over: bool = False,
    ) -> Escalation:
        return self.inner.resolve_escalation(
            escalation_id, by=by, resolution=resolution, comment=comment, take_over=take_over
        )


class TakeoverStore(DelegatingStore):
    """A store in which, at the first renewal, another worker has taken the session over.

    As if this worker's lease had lapsed (a long pause, say) and another worker had saved
    the session: the renewal and every later save of this worker are refused.
    """

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        stored = self.inner.load(session_id)
        assert stored is not None
        if stored.version == version:
            # The takeover's save; it reuses the owner name only because the inner store
            # would otherwise (rightly) refuse it while the lease is live.
            self.inner.save(
                session_id,
                stored.snapshot,
                expected_version=version,
                owner=owner,
                lease_seconds=None,
            )
        self.inner.renew(session_id, version=version, owner=owner, lease_seconds=lease_seconds)
