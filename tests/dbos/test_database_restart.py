"""A durable run survives restarts of its database: one while a step runs, one while the
run waits for its approval. It finishes once: each tool ran once, the history is the
uninterrupted run's, the approval was used once.

The server is this module's own (``.ci/postgres start`` in a directory of its own, as
the store's outage tests do), so restarting it disturbs no other test. A second worker
is alive throughout: when the restart drops the first worker's connections, it must not
take the run over as if that worker were dead.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.ci import skip_or_fail
from tests.host.sessions.private_server import PrivateServer, server_binaries_present
from tests.host.sessions.stores import fresh_database

from .crash_harness import (
    BOUND,
    Worker,
    approve,
    postgres_config,
    reference_history,
    violations,
    wait_for_approval,
    workers,
    workflow_status,
)
from .crash_worker import ANSWER, Ledger


@pytest.fixture(scope="module")
def private_server() -> Iterator[PrivateServer]:
    if not server_binaries_present():
        message = "the database restart test starts a server of its own: install postgresql"
        skip_or_fail(message)
    server = PrivateServer.start(Path(tempfile.mkdtemp(prefix="stageware-pg-")))
    yield server
    server.stop()


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + BOUND
    while not path.exists():
        assert time.monotonic() < deadline, f"the worker never paused ({path})"
        time.sleep(0.05)


def test_a_run_finishes_once_across_database_restarts(
    private_server: PrivateServer, tmp_path: Path
) -> None:
    reference: list[Any] = reference_history(private_server.url, tmp_path / "reference.log")
    with fresh_database(private_server.url) as database:
        pause = tmp_path / "paused"
        running = postgres_config(database, "restarted", pause=2, pause_file=str(pause))
        Ledger(running.ledger).create()
        with workers() as started:
            started.append(b := Worker.start(replace(running, job="serve"), tmp_path / "b.log"))
            b.ready()
            started.append(a := Worker.start(running, tmp_path / "a.log"))
            # Mid-step: lookup is recorded, note is about to run.
            wait_for(pause)
            private_server.restart()
            pause.unlink()
            # In the durable wait.
            interrupt_id = wait_for_approval(running)
            private_server.restart()
            approve(running, interrupt_id)
            result = a.result()
            status = workflow_status(running)
            assert result["text"] == ANSWER, result
            assert violations(running, reference, interrupt_id, status) == []
        # Nobody took the run over from the worker that ran it.
        assert {pid for _, _, pid in Ledger(running.ledger).rows(running.session)} == {
            a.process.pid
        }
