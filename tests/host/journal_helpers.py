"""A step journal kept in memory, and what the journal tests need around it.

``MemoryJournal`` is a real ``StepJournal``: it draws places in order, records each step's
outcome as JSON text (as a database would keep it) in a ``JournalBook`` shared between a
run and its replays, and hands recorded outcomes back. A replay after a crash is a new
journal with the same key on a copy of the book cut back to the records written before
the crash (``JournalBook.until``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final


@final
@dataclass(frozen=True)
class Entry:
    """One recorded step: its place, its name and its outcome as JSON text."""

    place: int
    name: str
    outcome: str


@final
@dataclass
class JournalBook:
    """The records of one invocation's steps, in the order they were written."""

    entries: list[Entry] = field(default_factory=list[Entry])

    def until(self, count: int) -> JournalBook:
        """A copy holding the first *count* records written: what a crash then leaves."""
        return JournalBook(list(self.entries[:count]))

    def at(self, place: int) -> Entry | None:
        return next((entry for entry in self.entries if entry.place == place), None)


@final
class _Place:
    __slots__ = ("name", "number", "used")

    def __init__(self, number: int, name: str) -> None:
        self.number = number
        self.name = name
        self.used = False


class StepNameError(RuntimeError):
    """A replay reached a recorded place under another name: the run took another path."""


@final
class JournalBrokenError(Exception):
    """The memory journal's own failure at a step, as an engine's (a cancelled workflow)."""


class MemoryJournal:
    """A ``StepJournal`` whose records live in a ``JournalBook``.

    Attributes:
        ran: The names of the steps whose bodies ran here, in the order they started.
        replayed: The names of the steps handed back from the book.
    """

    def __init__(
        self, key: str, book: JournalBook | None = None, *, breaks_at: str | None = None
    ) -> None:
        self._key = key
        self.book = JournalBook() if book is None else book
        self._next = 0
        self.ran: list[str] = []
        self.replayed: list[str] = []
        # The step at which the journal itself fails, as an engine may (StepJournal.failure).
        self._breaks_at = breaks_at
        self.failure: BaseException | None = None

    @property
    def key(self) -> str:
        return self._key

    def reserve(self, name: str) -> object:
        place = _Place(self._next, name)
        self._next += 1
        entry = self.book.at(place.number)
        if entry is not None and entry.name != name:
            raise StepNameError(
                f"step {place.number} was recorded as {entry.name!r}, the replay asks for {name!r}"
            )
        return place

    async def run(self, place: object, step: Callable[[], Awaitable[Any]]) -> Any:
        assert isinstance(place, _Place)
        assert not place.used, f"place {place.number} ({place.name}) run twice"
        place.used = True
        entry = self.book.at(place.number)
        if entry is not None:
            self.replayed.append(place.name)
            return json.loads(entry.outcome)
        if place.name == self._breaks_at:
            self.failure = JournalBrokenError(f"the journal broke at step {place.number}")
            raise self.failure
        self.ran.append(place.name)
        result = await step()
        # Recorded as text, as a database keeps it: only JSON data survives.
        outcome = json.dumps(result, allow_nan=False)
        self.book.entries.append(Entry(place.number, place.name, outcome))
        return json.loads(outcome)


def copy_sqlite(source: Path, target: Path) -> None:
    """Copy the SQLite database at *source* as it is now (committed data only)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    # Both closed: the copy is one file, ready to be copied again.
    src.close()
    dst.close()


def fresh_copy(pristine: Path, target: Path) -> Path:
    """A new file holding *pristine*'s database, for one replay to change."""
    shutil.copyfile(pristine, target)
    return target
