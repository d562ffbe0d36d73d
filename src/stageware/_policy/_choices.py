"""Reading a hook point, band or fail mode from what an author wrote, with a near-miss hint."""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import TypeVar

__all__ = ["choose"]

E = TypeVar("E", bound=StrEnum)


def choose(kind: type[E], value: object, what: str) -> E:
    """Return the member of *kind* that *value* is or names.

    Raises:
        ValueError: For an unknown value, listing the valid ones and the closest match.
    """
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    valid = [member.value for member in kind]
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, valid, n=1, cutoff=0.6)
        if close:
            hint = f"; did you mean {close[0]!r}?"
    raise ValueError(f"unknown {what} {value!r}{hint} (valid: {', '.join(valid)})")
