"""Plain-text tables for listings: columns padded to their widest cell, cells made safe.

A cell may hold text a middleware or a model wrote (a reason, an interrupt's question),
so it is shown on one line with control characters escaped: nothing in it can break the
table or reach the terminal as an escape sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

__all__ = ["age", "cell", "render"]


def render(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as lines of text: a header line, then one line per row."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"


def cell(text: str, limit: int | None = None) -> str:
    """*text* on one line, control characters escaped, cut to *limit* characters."""
    flat = " ".join(text.split())
    shown = "".join(char if char.isprintable() else repr(char)[1:-1] for char in flat)
    if limit is not None and len(shown) > limit:
        return shown[: limit - 3] + "..."
    return shown


def age(since: datetime, now: datetime) -> str:
    """How long ago *since* was, in its largest unit: ``42s``, ``5m``, ``3h``, ``2d``."""
    seconds = max(timedelta(0), now - since).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
