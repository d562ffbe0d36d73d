"""Timeouts as a policy author writes them: ``"250ms"``, ``"2s"``, ``1.5``, a ``timedelta``."""

from __future__ import annotations

import math
import re
from datetime import timedelta

__all__ = ["parse_timeout"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)\s*")


def parse_timeout(value: object, where: str) -> timedelta | None:
    """Return *value* as a positive ``timedelta``, or ``None`` for no limit.

    Raises:
        ValueError: For a non-positive, infinite or unparsable value, naming *where*.
        TypeError: For a value of another type.
    """
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(
            f"{where}: a timeout is a timedelta, seconds (int or float) or a string such as "
            f"'250ms', '2s', '1.5m', '1h'; got {value!r}"
        )
    elif isinstance(value, str):
        match = _DURATION.fullmatch(value)
        if match is None:
            raise ValueError(
                f"{where}: cannot read {value!r} as a duration; write a number and a unit, "
                "ms, s, m or h: '250ms', '2s', '1.5m', '1h'"
            )
        seconds = float(match[1]) * _UNITS[match[2]]
    else:
        seconds = float(value)
    try:
        limit = timedelta(seconds=seconds) if math.isfinite(seconds) else timedelta(0)
    except OverflowError:  # past timedelta's 999999999 days
        raise ValueError(f"{where}: {value!r} is longer than any timeout can be") from None
    if not limit > timedelta(0):
        # timedelta rounds to microseconds: 1e-9 s would be a limit of zero.
        raise ValueError(f"{where}: a timeout must be a positive, finite duration, got {value!r}")
    return limit
