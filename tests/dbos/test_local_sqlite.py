"""The single-process case on SQLite, with no server: a worker killed (SIGKILL) mid-run
and started again finishes the run once, recovered by DBOS at its launch.

On SQLite there is one worker process, which ``launch`` gives a fixed executor id: the
restarted process has the dead one's id, and DBOS recovers that executor's pending
workflows when it launches. Each tool ran once, the history is the uninterrupted run's,
the approval given once was used once.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .crash_harness import (
    Worker,
    approve_when_waiting,
    load_session,
    messages,
    pairing_errors,
    violations,
    workers,
    workflow_status,
)
from .crash_worker import ANSWER, Ledger, WorkerConfig


def sqlite_config(folder: Path, **changes: Any) -> WorkerConfig:
    config = WorkerConfig(
        job="run",
        database=f"sqlite:///{folder / 'dbos.sqlite'}",
        sessions=f"sqlite:///{folder / 'sessions.db'}",
        ledger=str(folder / "ledger.db"),
        app="crash_local",
        session="local",
    )
    return replace(config, **changes)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    folder = tmp_path_factory.mktemp("reference")
    config = sqlite_config(folder)
    Ledger(config.ledger).create()
    with workers() as started:
        started.append(worker := Worker.start(config, folder / "worker.log"))
        approve_when_waiting(config)
        assert worker.result()["text"] == ANSWER
    history = messages(load_session(config))
    assert not pairing_errors(history)
    return history


# Before the first tool call; between the concurrent calls; right after the pending
# approval is saved; after the approved refund, before the last model call.
POINTS: list[int | str] = [1, 2, "interrupt", 5]


@pytest.mark.parametrize("point", POINTS, ids=[f"after-{p}" for p in POINTS])
def test_a_local_run_killed_mid_way_finishes_once_after_a_restart(
    reference: list[Any], tmp_path: Path, point: int | str
) -> None:
    dying = sqlite_config(tmp_path, kill=point)
    Ledger(dying.ledger).create()
    with workers() as started:
        started.append(first := Worker.start(dying, tmp_path / "first.log"))
        interrupt_id = None
        if point == 5:  # the run waits for its approval before it dies
            interrupt_id = approve_when_waiting(dying)
        first.killed()
        restarted = replace(dying, job="finish", kill=None)
        started.append(second := Worker.start(restarted, tmp_path / "second.log"))
        if interrupt_id is None:
            interrupt_id = approve_when_waiting(dying)
        result = second.result()
    assert result["text"] == ANSWER, result
    assert violations(dying, reference, interrupt_id, workflow_status(dying)) == []
