"""``CommandError``: what a command reports as one line on stderr, with exit status 2."""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A command could not do what it was asked; the message says why, in one line."""
