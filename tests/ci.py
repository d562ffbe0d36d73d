"""Tests that need something this machine lacks (a server, a binary): skip, but not in CI.

CI sets ``CI``; there every such test must run, so a missing server fails the test with
the same message instead of skipping it.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether ``CI`` is set (to anything but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test for *reason*; fail it instead when the tests run in CI."""
    if in_ci():
        pytest.fail(f"CI is set, so this does not skip: {reason}", pytrace=False)
    pytest.skip(reason)
