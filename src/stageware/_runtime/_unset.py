"""The "not given" sentinel for keyword-only ``replace()`` methods.

``None`` is a legitimate replacement value for optional fields, so omission needs a
marker of its own. ``Unset`` is a final class with a single instance so that both
checkers narrow ``x: T | Unset`` with ``isinstance(x, Unset)``.
"""

from __future__ import annotations

from typing import Final, final

__all__ = ["UNSET", "Unset"]


@final
class Unset:
    """Type of ``UNSET``: a keyword argument that was not given."""

    __slots__ = ()
    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        # One instance only, so identity checks and pickling round-trips agree.
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()
"""Default of every ``replace()`` keyword: the field keeps its current value."""
