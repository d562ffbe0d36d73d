"""The README's "Durable runs on DBOS" example runs as written, on SQLite, and says what it prints.

It registers an agent kind and launches DBOS at import time, as an application does, so
it runs in a fresh interpreter in a directory of its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stageware import SQLiteSessionStore

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Durable runs on DBOS\n") :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_durable_runs_example_runs_on_sqlite(tmp_path: Path) -> None:
    for _ in range(2):  # the second run finds the first's session and adds a turn
        ran = subprocess.run(
            [sys.executable, "-c", _example()],
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
