"""Tests that need something this machine lacks (a server, a binary): skip, but not in CI.

CI sets ``CI``; there every such test must run, so a missing server fails the test with
the same message instead of skipping it.

Such a skip is reported once per reason, not once per test. pytest folds skips that share
a location and a reason into one summary line (``-ra``), but a skip raised in a fixture is
placed at each test's own line, so the hundred-odd Postgres tests of a run without a server
used to print a hundred-odd identical lines. ``folded_location`` (called by
``tests/conftest.py``'s ``pytest_runtest_makereport``) moves the skips raised here to one
place, ``skip_folded`` below, so that each reason prints once, with its count: ``SKIPPED
[201] tests/ci.py:41: the PostgreSQL tests need a server: ...``. ``pytest -rs -v`` still names
every test that skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, NoReturn

import pytest

_HERE: Final = str(Path(__file__).resolve())
# The reasons skip_folded raised in this process (a pytest-xdist worker reports its own).
_FOLDED: set[str] = set()


def in_ci() -> bool:
    """Whether ``CI`` is set (to anything but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test for *reason*; fail it instead when the tests run in CI."""
    if in_ci():
        pytest.fail(f"CI is set, so this does not skip: {reason}", pytrace=False)
    skip_folded(reason)


def skip_folded(reason: str) -> NoReturn:
    """Skip the test for *reason*, reported with every other test skipped for it as one line."""
    _FOLDED.add(f"Skipped: {reason}")
    pytest.skip(reason)


def folded_location(longrepr: tuple[str, int, str]) -> tuple[str, int, str] | None:
    """The location a skip's report should carry: ``skip_folded``'s, for a skip it raised
    (whatever test or fixture called it), so that pytest prints one line per reason; ``None``
    for any other skip, which keeps its own.

    Args:
        longrepr: The skipped report's ``(path, line, message)``.
    """
    message = longrepr[2]
    return (_HERE, skip_folded.__code__.co_firstlineno, message) if message in _FOLDED else None
