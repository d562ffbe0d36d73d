"""The durable-runs guide's "Durable runs on DBOS" example runs as written, on SQLite, and
says what it prints.

It registers an agent kind and launches DBOS at import time, as an application does, so
it runs in a fresh interpreter in a directory of its own.
"""

from __future__ import annotations

from pathlib import Path

from stageware import SQLiteSessionStore
from tests.readme import readme_blocks, run_example


def test_the_durable_runs_example_runs_on_sqlite(tmp_path: Path) -> None:
    for _ in range(2):  # the second run finds the first's session and adds a turn
        ran = run_example(readme_blocks("### Durable runs on DBOS\n")[0], tmp_path)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == "end_turn Refunded.\n"

    with SQLiteSessionStore(tmp_path / "sessions.db") as store:
        stored = store.load("c1")
    assert stored is not None
    assert len(stored.snapshot["messages"]) == 8
    assert stored.lease is None
