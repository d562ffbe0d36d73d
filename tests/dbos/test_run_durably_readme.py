"""The README's run_durably and dead-worker examples run as written.

Each launches DBOS at import time, as an application does, so it runs in a fresh
interpreter. The worker example runs on the real PostgreSQL server
(``STAGEWARE_TEST_POSTGRES_URL``), in a database of its own: the README's query must list
the worker's liveness lock while it lives, and not once it was killed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

README = Path(__file__).resolve().parents[2] / "README.md"
_URL_VARIABLE = "STAGEWARE_TEST_POSTGRES_URL"


def _blocks(heading: str, language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    # To the next heading of level 2 to 4 (a comment in a code block has one #).
    following = re.search(r"\n#{2,4} ", section[1:])
    section = section if following is None else section[: following.start() + 1]
    return [part.split("```\n", 1)[0] for part in section.split(f"```{language}\n")[1:]]


def test_the_run_durably_example_prints_its_steps(tmp_path: Path) -> None:
    [code] = _blocks("#### A live agent's invocations as workflows", "python")

    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "It shipped.\n['model:scripted', 'tool:track', 'model:scripted']\n"


@pytest.fixture
def database() -> Iterator[str]:
    """A database of this test's own on the test server, dropped afterwards."""
    url = os.environ.get(_URL_VARIABLE)
    if not url:
        how = f"the worker example needs a PostgreSQL server: set {_URL_VARIABLE}"
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"CI is set, so this does not skip: {how}", pytrace=False)
        pytest.skip(how)
    name = f"readme_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_the_worker_example_holds_its_lock_until_it_dies(database: str) -> None:
    [worker_code] = _blocks("#### Dead workers: the liveness lock", "python")
    [query] = _blocks("#### Dead workers: the liveness lock", "sql")

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
