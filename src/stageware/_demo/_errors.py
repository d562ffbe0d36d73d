"""The error every demo story raises when one of its claims does not hold."""

from __future__ import annotations

__all__ = ["DemoCheckError"]


class DemoCheckError(AssertionError):
    """The demo did not do what its trace claims."""
