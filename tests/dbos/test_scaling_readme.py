"""The durable-runs guide's "Scaling on DBOS" worker and producer run as written, on a real
PostgreSQL.

The worker block runs in a process of its own, as a user starts it; the producer block
then enqueues through a ``DBOSClient`` and prints what that worker answered. Each run gets
a database of its own (DBOS keeps one application's queue names to itself per database).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme import page_of, readme_blocks

pytest.importorskip("dbos")


def test_a_producer_gets_the_answer_of_a_worker_in_another_process(
    database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker_code, producer_code = readme_blocks("### Scaling on DBOS: queues across workers")
    worker_file = tmp_path / "worker.py"
    worker_file.write_text(worker_code, encoding="utf-8")
    monkeypatch.setenv("DATABASE_URL", database)
    worker = subprocess.Popen(
        [sys.executable, str(worker_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "DATABASE_URL": database},
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline() == "worker ready\n"

        exec(compile(producer_code, page_of("### Scaling on DBOS"), "exec"), {})

        assert capsys.readouterr().out == "end_turn We have refunded the second charge.\n"
    finally:
        worker.kill()
        worker.wait()
