"""Closing async iterators the host did not create."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["close_iterator"]


async def close_iterator(iterator: AsyncIterator[Any]) -> None:
    """Close *iterator* now if it can be closed (async generators can).

    A model's or tool's stream abandoned mid-way (cancellation, an error downstream) would
    otherwise be finalised whenever the garbage collector gets to it, in whatever task that
    happens to be, running its cleanup code at an arbitrary time.
    """
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        outcome = aclose()
        if inspect.isawaitable(outcome):
            await outcome
