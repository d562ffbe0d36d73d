"""The multi-worker example runs as the README shows it, and pays every refund once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_example_pays_each_refund_once(postgres_server: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "examples/multi_worker.py",
            postgres_server,
            "--workers",
            "3",
            "--sessions",
            "30",
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
    refused = int(lines["conflicts"].split()[0]) + int(lines["late duplicates"].split()[0])
    assert refused == 30  # every second delivery found the session claimed or finished
