"""Escalations as table rows, shared by every store: the columns, encoded and checked.

An escalation is kept as one row of plain columns, with the hook event as JSON text. The
same encoding serves the memory store, which keeps the rows themselves, so that a store of
any kind hands back copies and refuses the same values. Times are ``datetime`` here; the
SQLite store writes them as ISO 8601 text, which ``from_row`` reads back as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, LiteralString, NoReturn, cast, final

from ._encoding import json_problem
from ._escalations import (
    ESCALATION_STATUSES,
    Escalation,
    EscalationPage,
    EscalationStatus,
    check_listing,
    text_problem,
)
from ._paging import Place, check_limit, decode_cursor, encode_cursor
from ._store import SessionError

__all__ = [
    "COLUMNS",
    "EscalationQuery",
    "EscalationRow",
    "check_escalation_id",
    "escalation_query",
    "from_row",
    "read_time",
    "to_row",
]

# LiteralString, so that the database stores may compose their statements from them.
COLUMNS: Final[tuple[LiteralString, ...]] = (
    "escalation_id",
    "session_id",
    "queue",
    "hook",
    "middleware",
    "reason",
    "event",
    "created_at",
    "status",
    "claimed_by",
    "claimed_at",
    "resolved_by",
    "resolved_at",
    "resolution",
    "comment",
)
"""The columns of a row, in the order ``to_row`` and ``from_row`` use."""

EscalationRow = tuple[
    str,
    str,
    str,
    str,
    str,
    str,
    str,
    datetime,
    str,
    str | None,
    datetime | None,
    str | None,
    datetime | None,
    str | None,
    str | None,
]

_TEXTS: Final = ("id", "session_id", "queue", "hook", "middleware")
_STATUSES: Final[dict[object, EscalationStatus]] = {name: name for name in ESCALATION_STATUSES}

_OPTIONAL_TEXTS: Final = ("claimed_by", "resolved_by", "resolution", "comment")


_Fail = Callable[[str], NoReturn]


def to_row(escalation: Escalation, what: str) -> EscalationRow:
    """The row that keeps *escalation*; times in UTC.

    *what* says what the store was doing, for the message (``"save session 's1' in
    sessions.db"``).

    Raises:
        SessionError: A field that no store can keep, or that is not of its type.
    """

    def fail(problem: str) -> NoReturn:
        raise SessionError(f"cannot {what}: escalation.{problem}; nothing was written")

    for name in (*_TEXTS, "reason", *_OPTIONAL_TEXTS):
        value = getattr(escalation, name)
        if value is None and name in _OPTIONAL_TEXTS:
            continue
        problem = text_problem(value, name, empty_allowed=name in ("reason", "comment"))
        if problem is not None:
            fail(problem)
    if escalation.status not in ESCALATION_STATUSES:
        fail(f"status must be one of {', '.join(ESCALATION_STATUSES)}, got {escalation.status!r}")
    # The field's type says dict, but an escalation built by hand may hold anything.
    event: object = cast(object, escalation.event)
    event_problem = json_problem(event, "event")
    if event_problem is None and not isinstance(event, dict):
        event_problem = f"event is a {type(event).__qualname__}, not a JSON object"
    if event_problem is not None:
        fail(event_problem)
    created_at = _utc(escalation.created_at, "created_at", fail)
    if created_at is None:
        fail("created_at must be a timezone-aware datetime, got None")
    return (
        escalation.id,
        escalation.session_id,
        escalation.queue,
        escalation.hook,
        escalation.middleware,
        escalation.reason,
        # Escaped to ASCII, as snapshots are: a lone surrogate in the event stays storable.
        json.dumps(escalation.event, allow_nan=False, separators=(",", ":")),
        created_at,
        escalation.status,
        escalation.claimed_by,
        _utc(escalation.claimed_at, "claimed_at", fail),
        escalation.resolved_by,
        _utc(escalation.resolved_at, "resolved_at", fail),
        escalation.resolution,
        escalation.comment,
    )


def from_row(row: Sequence[object], where: str) -> Escalation:
    """The escalation a stored row keeps; times may be ``datetime`` or ISO 8601 text.

    Raises:
        SessionError: The row is damaged (a hand edit, say): it names the escalation and
            the column.
    """
    values: dict[str, object] = dict(zip(COLUMNS, row, strict=True))
    escalation_id = values["escalation_id"]

    def fail(problem: str) -> NoReturn:
        raise SessionError(f"escalation {escalation_id!r} in {where} is damaged: {problem}")

    def text(column: str) -> str:
        value = values[column]
        if not isinstance(value, str):
            fail(f"column {column} holds {type(value).__qualname__}, not text")
        return value

    def optional_text(column: str) -> str | None:
        return None if values[column] is None else text(column)

    status = _STATUSES.get(values["status"])
    if status is None:
        fail(
            f"column status holds {values['status']!r}, not one of {', '.join(ESCALATION_STATUSES)}"
        )
    created_at = read_time(values["created_at"], "created_at", fail)
    if created_at is None:
        fail("column created_at is empty")
    return Escalation(
        id=text("escalation_id"),
        session_id=text("session_id"),
        queue=text("queue"),
        hook=text("hook"),
        middleware=text("middleware"),
        reason=text("reason"),
        event=_read_event(values["event"], fail),
        created_at=created_at,
        status=status,
        claimed_by=optional_text("claimed_by"),
        claimed_at=read_time(values["claimed_at"], "claimed_at", fail),
        resolved_by=optional_text("resolved_by"),
        resolved_at=read_time(values["resolved_at"], "resolved_at", fail),
        resolution=optional_text("resolution"),
        comment=optional_text("comment"),
    )


def _read_event(value: object, fail: _Fail) -> dict[str, Any]:
    if not isinstance(value, str):
        fail(f"column event holds {type(value).__qualname__}, not JSON text")
    try:
        event: object = json.loads(value)
    except (ValueError, RecursionError) as exc:
        fail(f"column event is not valid JSON ({exc})")
    if not isinstance(event, dict):
        fail(f"column event holds a JSON {type(event).__qualname__}, not an object")
    return cast(dict[str, Any], event)


def read_time(value: object, column: str, fail: _Fail) -> datetime | None:
    """A time column read back, in UTC; ``None`` for ``NULL``. *fail* raises, naming
    the row, for a value that is no time with its zone."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            fail(f"column {column} holds {value!r}, not an ISO 8601 time")
    if not isinstance(value, datetime) or value.tzinfo is None:
        fail(f"column {column} holds {value!r}, not a time with its time zone")
    return value.astimezone(UTC)


def _utc(value: object, name: str, fail: _Fail) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        fail(f"{name} must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(UTC)


_ORDERS: Final = {False: "created", True: "newest created"}
"""The name of each listing's order, by ``newest_first``, that its cursors carry."""
_LIST: Final = "list escalations"


def check_escalation_id(escalation_id: object, where: str) -> str:
    """*escalation_id* if it is one a store could hold (a non-empty str).

    Raises:
        SessionError: Naming *where* and what the id is instead.
    """
    if not isinstance(escalation_id, str) or not escalation_id:
        raise SessionError(
            f"cannot look up an escalation in {where}: its id must be a non-empty str, "
            f"got {escalation_id!r}"
        )
    return escalation_id


@final
@dataclass(frozen=True, slots=True)
class EscalationQuery:
    """An ``escalation_page`` call, checked: what the stores turn into their query.

    Attributes:
        queue: Only this queue; ``None``: any.
        status: Only this status; ``None``: any.
        created_before: Only escalations created before this time (UTC).
        limit: The page's size.
        after: The place (``created_at``, id, ``""``) after which the page starts.
        newest_first: The newest first (a backward walk of the same index), not the
            oldest.
    """

    queue: str | None
    status: EscalationStatus | None
    created_before: datetime | None
    limit: int
    after: Place | None
    newest_first: bool = False

    @staticmethod
    def key(escalation: Escalation) -> Place:
        """Where *escalation* stands in the listing: by creation, then by id."""
        return escalation.created_at, escalation.id, ""

    def page(self, escalations: Iterable[Escalation]) -> EscalationPage:
        """The page of *escalations* (the store's, in *queue* with *status*) asked for."""
        found = sorted(
            (
                e
                for e in escalations
                if self.created_before is None or e.created_at < self.created_before
            ),
            key=self.key,
            reverse=self.newest_first,
        )
        after = self.after
        if after is None:
            rest = found
        elif self.newest_first:
            rest = [e for e in found if self.key(e) < after]
        else:
            rest = [e for e in found if self.key(e) > after]
        return self.finish(rest[: self.limit + 1], total=len(found))

    def finish(self, fetched: list[Escalation], *, total: int) -> EscalationPage:
        """The page from up to ``limit + 1`` escalations fetched in order."""
        entries = fetched[: self.limit]
        more = len(fetched) > self.limit
        order = _ORDERS[self.newest_first]
        return EscalationPage(
            entries, total, encode_cursor(order, self.key(entries[-1])) if more else None
        )


def escalation_query(
    queue: object,
    *,
    status: object,
    created_before: object,
    limit: object,
    after: object,
    newest_first: object = False,
) -> EscalationQuery:
    """Check the arguments of ``escalation_page``.

    Raises:
        SessionError: Naming the argument that is wrong, and how.
    """
    check_listing(queue, status)
    if not isinstance(newest_first, bool):
        raise SessionError(f"cannot {_LIST}: newest_first must be a bool, got {newest_first!r}")
    if created_before is not None and (
        not isinstance(created_before, datetime) or created_before.tzinfo is None
    ):
        raise SessionError(
            f"cannot {_LIST}: created_before must be a timezone-aware datetime or None, "
            f"got {created_before!r}"
        )
    return EscalationQuery(
        queue=cast(str | None, queue),
        status=cast(EscalationStatus | None, status),
        created_before=None if created_before is None else created_before.astimezone(UTC),
        limit=check_limit(limit, _LIST),
        after=None if after is None else decode_cursor(after, _ORDERS[newest_first], _LIST),
        newest_first=newest_first,
    )
