"""Cutting a long text short, for error messages that quote what they are about."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(text: str, limit: int) -> str:
    """*text* if it has at most *limit* characters, else its start and ``...`` in *limit*."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
