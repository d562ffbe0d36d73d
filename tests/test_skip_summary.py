"""A run without a Postgres server reports its skips on one line, and CI still fails them.

Each case runs pytest for real, in a subprocess, on a module most of whose tests need the
server, with ``STAGEWARE_TEST_POSTGRES_URL`` unset (tests/ci.py says how the skips fold).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_MODULE = "tests/host/sessions/test_postgres_schemas.py"


def _pytest(*, ci: bool) -> subprocess.CompletedProcess[str]:
    # Without the server's URL, and as a run of its own (not an xdist worker's).
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("STAGEWARE_TEST_POSTGRES_URL", "CI") and not name.startswith("PYTEST_")
    }
    if ci:
        environment["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ra", _MODULE],
        cwd=_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_skips_for_a_missing_server_are_one_summary_line() -> None:
    run = _pytest(ci=False)

    assert run.returncode == 0, run.stdout + run.stderr
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    [line] = skipped
    found = re.match(
        r"SKIPPED \[(\d+)\] tests/ci\.py:\d+: the PostgreSQL tests need a server", line
    )
    assert found is not None, line
    # The line counts every skipped test, and there are many.
    summary = run.stdout.strip().splitlines()[-1]
    assert re.search(rf"\b{found.group(1)} skipped in ", summary), summary
    assert int(found.group(1)) > 1


def test_with_ci_set_they_fail_instead() -> None:
    run = _pytest(ci=True)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "SKIPPED" not in run.stdout
    assert "CI is set, so this does not skip: the PostgreSQL tests need a server" in run.stdout
