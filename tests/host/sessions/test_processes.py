"""Several OS processes on one SQLite file or one Postgres schema, as workers would be.

Each worker is a fresh interpreter (``worker.py``) with its own store and connections; the
test starts them together and reads what each did. Nothing is shared but the database.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

from stageware._host.sessions import (
    Escalation,
    SessionLeasedError,
    SessionStore,
    StoredSession,
)

from .stores import StoreSpec, counter_snapshot

ROOT = Path(__file__).resolve().parents[3]


class Worker:
    """A worker process, started and, once it has opened its store, waiting for ``go()``."""

    def __init__(self, spec: StoreSpec, *command: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.host.sessions.worker", spec.to_json(), *command],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self) -> None:
        assert self.read_line() == "ready"

    def go(self) -> None:
        stdin = self.pipe(self.process.stdin)
        stdin.write("go\n")
        stdin.flush()

    def read_line(self) -> str:
        line = self.pipe(self.process.stdout).readline()
        if not line:
            _, stderr = self.process.communicate(timeout=30)
            pytest.fail(f"worker exited with {self.process.returncode}: {stderr}")
        return line.strip()

    def result(self) -> Any:
        """The worker's JSON line, once it has exited cleanly."""
        stdout, stderr = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, stderr
        return json.loads(stdout)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=30)
        assert self.process.returncode == -signal.SIGKILL

    @staticmethod
    def pipe(stream: IO[str] | None) -> IO[str]:
        assert stream is not None
        return stream


@pytest.fixture
def workers() -> Iterator[Callable[..., Worker]]:
    """``workers(spec, *command)`` starts a worker; any still running are killed after."""
    started: list[Worker] = []

    def start(spec: StoreSpec, *command: str) -> Worker:
        worker = Worker(spec, *command)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.kill()


def go_all(workers: list[Worker]) -> None:
    """Start the workers' work together, once all of them are ready."""
    for worker in workers:
        worker.ready()
    for worker in workers:
        worker.go()


@pytest.fixture
def store(shared_spec: StoreSpec, opener: Callable[[StoreSpec], SessionStore]) -> SessionStore:
    return opener(shared_spec)


def test_processes_that_retry_on_conflict_lose_no_update(
    shared_spec: StoreSpec, store: SessionStore, workers: Callable[..., Worker]
) -> None:
    processes, increments = 4, 25
    store.save("counter", counter_snapshot(0), expected_version=0, owner="test", lease_seconds=None)
    started = [
        workers(shared_spec, "increment", "counter", str(increments), f"p{index}")
        for index in range(processes)
    ]

    go_all(started)
    for worker in started:
        worker.result()

    final = store.load("counter")
    assert final is not None
    state = final.snapshot["state"]
    assert state["count"] == processes * increments
    assert final.version == processes * increments + 1
    # Every increment of every process is in the log, once: no save overwrote another.
    assert sorted(state["log"]) == sorted(
        f"p{p}:{i}" for p in range(processes) for i in range(increments)
    )
    # Each process's increments are in its own order.
    for p in range(processes):
        own = [int(entry.split(":")[1]) for entry in state["log"] if entry.startswith(f"p{p}:")]
        assert own == list(range(increments))


def test_of_two_processes_claiming_one_version_exactly_one_wins(
    shared_spec: StoreSpec, store: SessionStore, workers: Callable[..., Worker]
) -> None:
    sessions = [f"race-{index}" for index in range(10)]
    for session_id in sessions:
        store.save(
            session_id, counter_snapshot(0), expected_version=0, owner="test", lease_seconds=None
        )
    started = [workers(shared_spec, "claim", ",".join(sessions), "1", f"w{i}") for i in (0, 1)]

    go_all(started)
    results = [worker.result()["results"] for worker in started]

    for index, session_id in enumerate(sessions):
        outcomes = sorted(result[index] for result in results)
        assert outcomes == ["conflict", "won"], session_id
        winner = f"w{[result[index] for result in results].index('won')}"
        stored = store.load(session_id)
        assert stored is not None
        assert stored.version == 2
        assert stored.snapshot["state"]["log"] == [winner]
        assert stored.lease is not None
        assert stored.lease.owner == winner


def test_a_killed_holder_blocks_others_until_its_lease_expires(
    shared_spec: StoreSpec, store: SessionStore, workers: Callable[..., Worker]
) -> None:
    lease_seconds = 1.0
    store.save("s1", counter_snapshot(0), expected_version=0, owner="test", lease_seconds=None)
    holder = workers(shared_spec, "hold", "s1", "1", "holder", str(lease_seconds))
    go_all([holder])
    assert json.loads(holder.read_line()) == {"claimed": True}
    holder.kill()

    with pytest.raises(SessionLeasedError) as caught:
        store.save("s1", counter_snapshot(1), expected_version=2, owner="rescuer", lease_seconds=30)
    lease = caught.value.lease
    assert lease.owner == "holder"

    refusals, refused = 1, caught.value
    deadline = time.monotonic() + 10 * lease_seconds
    while True:
        try:
            store.save(
                "s1", counter_snapshot(1), expected_version=2, owner="rescuer", lease_seconds=30
            )
            break
        except SessionLeasedError as error:
            refused = error
            refusals += 1
            assert time.monotonic() < deadline
            time.sleep(0.05)
    taken_at = datetime.now(UTC)
    assert refused.lease == lease

    # The store's clock and this one are the same machine's here.
    assert taken_at >= lease.expires_at
    assert refusals > 1
    loaded = store.load("s1")
    assert isinstance(loaded, StoredSession)
    assert loaded.version == 3
    assert loaded.lease is not None
    assert loaded.lease.owner == "rescuer"


def test_of_two_processes_claiming_one_escalation_exactly_one_wins(
    shared_spec: StoreSpec, store: SessionStore, workers: Callable[..., Worker]
) -> None:
    ids: list[str] = []
    for index in range(10):
        escalation = Escalation.new(
            f"escalated-{index}",
            queue="refunds",
            hook="tool.before",
            middleware="limit",
            reason="over the limit",
            event={"index": index},
        )
        store.save(
            escalation.session_id,
            counter_snapshot(0),
            expected_version=0,
            owner="test",
            lease_seconds=None,
            escalation=escalation,
        )
        ids.append(escalation.id)
    started = [
        workers(shared_spec, "claim-escalations", ",".join(ids), f"human-{i}") for i in (0, 1)
    ]

    go_all(started)
    results = [worker.result()["results"] for worker in started]

    for index, escalation_id in enumerate(ids):
        outcomes = [result[index] for result in results]
        assert sorted(outcomes) == ["refused", "won"], escalation_id
        found = store.open_escalation(f"escalated-{index}")
        assert found is not None
        assert (found.status, found.claimed_by) == ("claimed", f"human-{outcomes.index('won')}")
