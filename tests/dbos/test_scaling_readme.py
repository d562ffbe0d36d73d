"""The README's "Scaling on DBOS" worker and producer run as written, on a real PostgreSQL.

The worker block runs in a process of its own, as a user starts it; the producer block
then enqueues through a ``DBOSClient`` and prints what that worker answered. Each run gets
a database of its own (DBOS keeps one application's queue names to itself per database).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmarks.durable_scaling import fresh_database
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, postgres_url

pytest.importorskip("dbos")

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "### Scaling on DBOS: queues across workers"


def _blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :].split("\n### ", 1)[0]
    return [block.split("```\n", 1)[0] for block in section.split("```python\n")[1:]]


@pytest.fixture
def database() -> Iterator[str]:
    url = postgres_url()
    if url is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"CI is set, so this does not skip: {HOW_TO_RUN_POSTGRES}", pytrace=False)
        pytest.skip(HOW_TO_RUN_POSTGRES)
    with fresh_database(url) as fresh:
        yield fresh


def test_a_producer_gets_the_answer_of_a_worker_in_another_process(
    database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker_code, producer_code = _blocks()
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

        exec(compile(producer_code, str(README), "exec"), {})

        assert capsys.readouterr().out == "end_turn We have refunded the second charge.\n"
    finally:
        worker.kill()
        worker.wait()
