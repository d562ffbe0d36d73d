"""Timeouts as a policy author writes them: ``"250ms"``, ``"2s"``, ``1.5``, a ``timedelta``.

A number with a unit (``ms``, ``s``, ``m``, ``h``) is read here: no well-kept library reads
that form within the runtime's dependencies (Go-style parsers refuse ``"2 s"``, which
policy specs use). An ISO 8601 duration (``"PT2S"``, ``"P1DT2H"``) is pydantic's to read.
"""

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
        if match is not None:
            seconds = float(match[1]) * _UNITS[match[2]]
        elif (iso := _iso_8601(value, where)) is not None:
            seconds = iso.total_seconds()
        else:
            raise ValueError(
                f"{where}: cannot read {value!r} as a duration; write a number and a unit, "
                "ms, s, m or h: '250ms', '2s', '1.5m', '1h' (or ISO 8601: 'PT2S')"
            )
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


def _iso_8601(text: str, where: str) -> timedelta | None:
    """*text* read as an ISO 8601 duration, or ``None``.

    Only the ISO form (``P...``): pydantic also reads ``"10:00"`` as ten hours, which a
    timeout written by hand rarely means. Years and months are refused: they have no fixed
    length, and ``"P1M"`` (a month) is most likely a slip for ``"PT1M"`` (a minute).
    """
    upper = text.strip().upper()
    if not upper.startswith(("P", "-P", "+P")):
        return None
    date_part = upper.partition("T")[0]
    if "Y" in date_part or "M" in date_part:
        raise ValueError(
            f"{where}: {text!r} counts years or months, which have no fixed length; write "
            "weeks, days or a time ('PT1M' is one minute, 'P1M' one month)"
        )
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(timedelta).validate_python(text.strip().upper())
    except ValidationError:
        return None
