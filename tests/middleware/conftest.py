"""The journal mode (``tests/journal_mode``)."""

from tests.journal_mode import journaled, pytest_configure

__all__ = ["journaled", "pytest_configure"]
