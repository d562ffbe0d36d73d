"""The README's "Durable runs on DBOS" example runs as written, on SQLite, and says what it prints.

It registers an agent kind and launches DBOS at import time, as an application does, so
it runs in a fresh interpreter in a directory of its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stageware import SQLiteSessionStore
from tests.readme import readme_blocks


def test_the_durable_runs_example_runs_on_sqlite(tmp_path: Path) -> None:
    for _ in range(2):  # the second run finds the first's session and adds a turn
        ran = subprocess.run(
            [sys.executable, "-c", readme_blocks("### Durable runs on DBOS\n")[0]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == "end_turn Refunded.\n"

    with SQLiteSessionStore(tmp_path / "sessions.db") as store:
        stored = store.load("c1")
    assert stored is not None
    assert len(stored.snapshot["messages"]) == 8
    assert stored.lease is None
