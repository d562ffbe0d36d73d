"""The demo's readable trace: one line per thing a stage, handler, hook or tool did."""

from __future__ import annotations

from collections import Counter
from typing import TextIO, final

__all__ = ["Trace"]

# Wide enough for the longest source, "ExecuteTool.Wrap approval", so lines align.
_SOURCE_WIDTH = 28


@final
class Trace:
    """Writes trace lines to a stream and counts them by kind, for the summary."""

    __slots__ = ("_out", "counts")

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.counts: Counter[str] = Counter()

    def heading(self, text: str) -> None:
        """Start a section of the story."""
        self._out.write(f"\n== {text}\n")

    def note(self, text: str) -> None:
        """A line of narration outside any stage."""
        self._out.write(f"   {text}\n")

    def line(self, source: str, text: str, *, count: str | None = None) -> None:
        """Record what *source* (a stage and handler, a hook, a tool) did."""
        if count is not None:
            self.counts[count] += 1
        self._out.write(f"   {source:<{_SOURCE_WIDTH}} {text}\n")
