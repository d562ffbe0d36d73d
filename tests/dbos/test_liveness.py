"""Dead workers found by their liveness lock, their workflows recovered on live ones.

Real worker processes (``tests.dbos.liveness_worker``) on the real PostgreSQL server
(``STAGEWARE_TEST_POSTGRES_URL``), each test in a DBOS system schema and application of its
own. A worker's workflow records a first step, waits for a message and records a second
one; the ledger counts who ran which step. Without the watcher a killed worker's workflow
stays PENDING forever, so these tests time out.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql

from stageware._dbos._liveness import ExecutorIdInUseError, Liveness, executor_lock_key
from tests.ci import skip_or_fail
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, postgres_url

dbos = pytest.importorskip("dbos")

_WATCH_SECONDS = 0.3


@dataclass
class Cluster:
    """Worker processes of one DBOS application on the test's system schema."""

    url: str
    schema: str
    app: str
    workers: list[Worker] = field(default_factory=list["Worker"])

    @property
    def ledger_schema(self) -> str:
        return f"{self.schema}_ledger"

    def worker(self, *command: str) -> Worker:
        executor_id = f"worker-{len(self.workers)}-{uuid.uuid4().hex[:6]}"
        config = {
            "url": self.url,
            "schema": self.schema,
            "ledger_schema": self.ledger_schema,
            "app": self.app,
            "executor_id": executor_id,
            "watch_seconds": _WATCH_SECONDS,
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.dbos.liveness_worker", json.dumps(config), *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        worker = Worker(executor_id, process)
        self.workers.append(worker)
        return worker

    def ledger(self, workflow_id: str) -> list[tuple[str, str]]:
        """The (step, executor id) rows the workflow's steps wrote, in order."""
        with psycopg.connect(self.url, autocommit=True) as connection:
            rows = connection.execute(
                sql.SQL(
                    "SELECT step, executor_id FROM {}.ledger WHERE workflow_id = %s ORDER BY id"
                ).format(sql.Identifier(self.ledger_schema)),
                (workflow_id,),
            ).fetchall()
        return [(str(step), str(executor)) for step, executor in rows]

    def status(self, workflow_id: str) -> tuple[str, str | None]:
        """The workflow's DBOS status and executor id, read from the system table."""
        with psycopg.connect(self.url, autocommit=True) as connection:
            row = connection.execute(
                sql.SQL(
                    "SELECT status, executor_id FROM {}.workflow_status WHERE workflow_uuid = %s"
                ).format(sql.Identifier(self.schema)),
                (workflow_id,),
            ).fetchone()
        assert row is not None, f"no workflow {workflow_id}"
        return str(row[0]), None if row[1] is None else str(row[1])

    def send_go(self, workflow_id: str) -> None:
        client = dbos.DBOSClient(
            system_database_url=self.url,
            dbos_system_schema=self.schema,
            application_name=self.app,
        )
        try:
            client.send(workflow_id, "go", topic="go")
        finally:
            client.destroy()

    def finished(self, workflow_id: str, timeout: float = 60.0) -> str:
        """The executor that finished the workflow, once it succeeded."""
        try:
            wait_until(lambda: self.status(workflow_id)[0] not in ("PENDING", "ENQUEUED"), timeout)
        except AssertionError:
            raise AssertionError(f"{workflow_id} did not finish: {self.logs()}") from None
        status, executor_id = self.status(workflow_id)
        assert status == "SUCCESS", f"workflow {workflow_id} ended {status}: {self.logs()}"
        assert executor_id is not None
        return executor_id

    def logs(self) -> str:
        """Every worker's log, for a failure's message: the workers are killed first."""
        return "\n".join(f"--- {w.executor_id}:\n{w.stderr()}" for w in self.workers)


@dataclass
class Worker:
    executor_id: str
    process: subprocess.Popen[str]
    _stderr: str | None = None

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if line.strip() != "ready":
            self.kill()
            raise AssertionError(f"worker {self.executor_id} did not start: {self.stderr()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stderr(self) -> str:
        """Its log, once it ended (kill it first)."""
        text = self._stderr
        if text is None:
            self.kill()
            assert self.process.stderr is not None
            text = self._stderr = self.process.stderr.read()
        return text


def wait_until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout}s")
        time.sleep(0.05)


@pytest.fixture
def postgres() -> str:
    return postgres_url() or skip_or_fail(HOW_TO_RUN_POSTGRES)


@pytest.fixture
def cluster(postgres: str) -> Iterator[Cluster]:
    suffix = uuid.uuid4().hex[:10]
    found = Cluster(postgres, f"dbos_live_{suffix}", f"live-{suffix}")
    with psycopg.connect(postgres, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(found.ledger_schema)))
        connection.execute(
            sql.SQL(
                "CREATE TABLE {}.ledger (id bigserial PRIMARY KEY, workflow_id text NOT NULL,"
                " step text NOT NULL, executor_id text NOT NULL)"
            ).format(sql.Identifier(found.ledger_schema))
        )
    yield found
    for worker in found.workers:
        worker.kill()
    with psycopg.connect(postgres, autocommit=True) as connection:
        for schema in (found.ledger_schema, found.schema):
            connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


def _started(cluster: Cluster) -> tuple[Worker, str]:
    """Worker A, running a workflow that recorded its first step and waits."""
    workflow_id = f"wf-{uuid.uuid4().hex[:8]}"
    a = cluster.worker("start", workflow_id)
    a.wait_ready()
    wait_until(lambda: cluster.ledger(workflow_id) == [("first", a.executor_id)], 30)
    return a, workflow_id


def test_a_killed_workers_workflow_is_recovered_by_a_live_worker(cluster: Cluster) -> None:
    a, workflow_id = _started(cluster)
    b = cluster.worker("serve")
    b.wait_ready()
    a.kill()
    cluster.send_go(workflow_id)

    assert cluster.finished(workflow_id) == b.executor_id
    # The first step came back from its checkpoint: it ran once, on the dead worker.
    expected = [("first", a.executor_id), ("second", b.executor_id)]
    assert cluster.ledger(workflow_id) == expected, cluster.logs()
    assert f"DBOS executor '{a.executor_id}' is gone" in b.stderr()


def test_a_live_workers_workflows_are_never_taken(cluster: Cluster) -> None:
    a, workflow_id = _started(cluster)
    b = cluster.worker("serve")
    b.wait_ready()
    # Many passes of B's watcher, while A holds its lock and its workflow waits.
    time.sleep(12 * _WATCH_SECONDS)
    assert cluster.status(workflow_id) == ("PENDING", a.executor_id)
    cluster.send_go(workflow_id)

    assert cluster.finished(workflow_id) == a.executor_id
    expected = [("first", a.executor_id), ("second", a.executor_id)]
    assert cluster.ledger(workflow_id) == expected, cluster.logs()
    assert "is gone" not in b.stderr()


def test_two_watchers_racing_recover_the_workflow_once(cluster: Cluster) -> None:
    a, workflow_id = _started(cluster)
    a.kill()
    cluster.send_go(workflow_id)
    # Started together, both find A's lock free on their first passes.
    b, c = cluster.worker("serve"), cluster.worker("serve")
    b.wait_ready()
    c.wait_ready()

    finisher = cluster.finished(workflow_id)

    assert finisher in (b.executor_id, c.executor_id)
    expected = [("first", a.executor_id), ("second", finisher)]
    assert cluster.ledger(workflow_id) == expected, cluster.logs()


def test_an_executor_id_held_by_a_live_process_is_refused(postgres: str) -> None:
    executor_id = f"twice-{uuid.uuid4().hex[:6]}"
    first = Liveness(postgres, executor_id=executor_id, application_name="x", hold_seconds=0.5)
    first.hold()
    try:
        second = Liveness(postgres, executor_id=executor_id, application_name="x", hold_seconds=0.5)
        with pytest.raises(ExecutorIdInUseError, match=executor_id):
            second.hold()
    finally:
        first.close()
    # Released with its connection: the id can be used again.
    again = Liveness(postgres, executor_id=executor_id, application_name="x", hold_seconds=0.5)
    again.hold()
    again.close()


def test_the_lock_keys_of_executors_differ() -> None:
    keys: set[Any] = {executor_lock_key(f"executor-{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= key < 2**63 for key in keys)


def test_a_watcher_that_lost_its_connection_recovers_nobody_for_the_grace(
    cluster: Cluster,
) -> None:
    a, _ = _started(cluster)
    a.kill()
    recovered: list[list[str]] = []
    watcher = Liveness(
        cluster.url,
        executor_id=f"watcher-{uuid.uuid4().hex[:6]}",
        application_name=cluster.app,
        system_schema=cluster.schema,
        watch_seconds=_WATCH_SECONDS,
        grace_seconds=1.5,
    )
    watcher.hold()
    try:
        # As a database restart would: the server ends the lock's connection.
        with psycopg.connect(cluster.url, autocommit=True) as connection:
            connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (f"stageware-liveness:{watcher.executor_id}",),
            )
        assert watcher.check("liveness-test", recovered.append) == []  # lost
        assert watcher.check("liveness-test", recovered.append) == []  # lock re-taken
        # A's lock is free and its workflow PENDING, but the other workers may not have
        # re-taken their locks yet: nobody is recovered during the grace.
        assert watcher.check("liveness-test", recovered.append) == []
        assert recovered == []
        time.sleep(1.5)
        assert watcher.check("liveness-test", recovered.append) == [a.executor_id]
        assert recovered == [[a.executor_id]]
    finally:
        watcher.close()
