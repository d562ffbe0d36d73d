"""The durable-runs guide's run_durably and dead-worker examples run as written.

Each launches DBOS at import time, as an application does, so it runs in a fresh
interpreter. The worker example runs on the real PostgreSQL server
(``STAGEWARE_TEST_POSTGRES_URL``), in a database of its own: the durable-runs guide's query must
list the worker's liveness lock while it lives, and not once it was killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from tests.readme import readme_blocks, run_example


def test_the_run_durably_example_prints_its_steps(tmp_path: Path) -> None:
    [code] = readme_blocks("#### A live agent's invocations as workflows", "python")

    ran = run_example(code, tmp_path)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "It shipped.\n['model:scripted', 'tool:track', 'model:scripted']\n"


def test_the_worker_example_holds_its_lock_until_it_dies(database: str) -> None:
    [worker_code] = readme_blocks("#### Dead workers: the liveness lock", "python")
    [query] = readme_blocks("#### Dead workers: the liveness lock", "sql")

    def live_workers() -> list[str]:
        with psycopg.connect(database, autocommit=True) as connection:
            rows = connection.execute(query.encode()).fetchall()
        return [str(row[0]) for row in rows]

    already = set(live_workers())
    worker = subprocess.Popen(
        [sys.executable, "-c", worker_code],
        env={**os.environ, "DATABASE_URL": database, "LIVENESS_URL": database},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline().split()
        assert line[:1] == ["worker"], worker.stderr.read() if worker.stderr else ""
        assert line[2:] == ["up"]
        lock = f"stageware-liveness:{line[1]}"[:63]
        assert lock in live_workers()
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    deadline = time.monotonic() + 10
    while set(live_workers()) - already:
        assert time.monotonic() < deadline, "the dead worker's lock is still held"
        time.sleep(0.05)
