"""The multi-worker example runs as the durable-runs guide shows it, on DBOS queues, and pays every
refund once.

Real worker processes on the real PostgreSQL server (``STAGEWARE_TEST_POSTGRES_URL``);
without it the test skips, or fails when ``CI`` is set.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci import skip_or_fail
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, postgres_url

pytest.importorskip("dbos")

ROOT = Path(__file__).resolve().parents[2]


def _server() -> str:
    url = postgres_url()
    if url is None:
        skip_or_fail(HOW_TO_RUN_POSTGRES)
    return url


def test_the_example_pays_each_refund_once() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "examples/multi_worker.py",
            _server(),
            "--workers",
            "3",
            "--sessions",
            "30",
            "--rate",
            "200",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(":", 1) for line in done.stdout.splitlines())
    assert lines["refunds paid"].strip() == "30"
    assert lines["double executions"].strip() == "0"
    assert lines["runs"].strip() == "90"  # a request and two answer deliveries per session
    # Every second delivery found the run resumed already, and ran nothing.
    assert int(lines["duplicates refused"].split()[0]) == 30
