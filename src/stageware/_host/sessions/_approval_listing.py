"""The approvals ledger's listing: the arguments of ``SessionStore.approvals``, checked,
and the order each listing runs in.

``query`` turns a call into a ``Query``: which statuses match, the filters, the page size
and where the page starts (a cursor, see ``_paging``). The memory store pages its entries
with ``Query.page``; the database stores turn the same ``Query`` into SQL and finish the
page with ``Query.finish``, so that every store orders, counts and cuts pages alike:

- pending: oldest asked first (``asked_at``, then session, then interrupt id);
- approved, denied, lapsed or ``"answered"``: newest answer first (``answered_at``...);
- any status (``None``): newest asked first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, LiteralString, NoReturn, cast, final

from ._approval_rows import ANSWERED, APPROVAL_STATUSES, ApprovalEntry, ApprovalPage, ApprovalStatus
from ._paging import Place, check_limit, decode_cursor, encode_cursor
from ._store import SessionError

__all__ = ["Order", "Query", "query"]

_LIST: Final = "list approvals"

Order = Literal["asked", "answered", "newest"]
"""How a listing is ordered: ``asked`` oldest first (pending), ``answered`` newest answer
first, ``newest`` newest asked first (any status)."""


@final
@dataclass(frozen=True, slots=True)
class Query:
    """An ``approvals`` call, checked: what the stores turn into their query.

    Attributes:
        statuses: The statuses that match; ``None``: any.
        hook: Only this hook point.
        middleware: Only this middleware.
        session_id: Only this session.
        asked_before: Only approvals asked before this time (UTC).
        limit: The page's size.
        order: Which column orders the listing, and which way (see ``Order``).
        after: The position after which the page starts: the order's time, the session
            and the interrupt id of the previous page's last entry; ``None``: from the
            start.
    """

    statuses: tuple[ApprovalStatus, ...] | None
    hook: str | None
    middleware: str | None
    session_id: str | None
    asked_before: datetime | None
    limit: int
    order: Order
    after: Place | None

    @property
    def descending(self) -> bool:
        """Whether the listing runs from the newest time to the oldest."""
        return self.order != "asked"

    @property
    def time_column(self) -> LiteralString:
        """The column of the order's time."""
        return "answered_at" if self.order == "answered" else "asked_at"

    def key(self, entry: ApprovalEntry) -> Place:
        """Where *entry* stands in the listing."""
        moment = entry.answered_at if self.order == "answered" else entry.asked_at
        assert moment is not None  # answered listings hold answered entries only
        return moment, entry.session_id, entry.interrupt_id

    def cursor(self, last: ApprovalEntry) -> str:
        """The cursor of the page after the one that ends with *last*."""
        return encode_cursor(self.order, self.key(last))

    def matches(self, entry: ApprovalEntry) -> bool:
        """Whether *entry* passes the filters (the memory store's ``WHERE``)."""
        return (
            (self.statuses is None or entry.status in self.statuses)
            and self.hook in (None, entry.hook)
            and self.middleware in (None, entry.middleware)
            and self.session_id in (None, entry.session_id)
            and (self.asked_before is None or entry.asked_at < self.asked_before)
        )

    def page(self, entries: Iterable[ApprovalEntry]) -> ApprovalPage:
        """The page of *entries* (all of the store's) this query asks for."""
        found = sorted(filter(self.matches, entries), key=self.key, reverse=self.descending)
        if self.after is not None:
            after = self.after
            found_after = [
                e
                for e in found
                if (self.key(e) < after if self.descending else self.key(e) > after)
            ]
        else:
            found_after = found
        return self.finish(found_after[: self.limit + 1], total=len(found))

    def finish(self, fetched: list[ApprovalEntry], *, total: int) -> ApprovalPage:
        """The page from up to ``limit + 1`` entries fetched in order (one more tells
        whether another page follows)."""
        entries = fetched[: self.limit]
        more = len(fetched) > self.limit
        return ApprovalPage(entries, total, self.cursor(entries[-1]) if more else None)


_ORDERS: Final[dict[object, Order]] = {
    "pending": "asked",
    None: "newest",
    "answered": "answered",
    "approved": "answered",
    "denied": "answered",
    "lapsed": "answered",
}


def query(
    *,
    status: object,
    hook: object,
    middleware: object,
    session_id: object,
    asked_before: object,
    limit: object,
    after: object,
) -> Query:
    """Check the arguments of ``approvals``.

    Raises:
        SessionError: Naming the argument that is wrong, and how.
    """

    def fail(problem: str) -> NoReturn:
        raise SessionError(f"cannot {_LIST}: {problem}")

    if status not in _ORDERS:
        fail(
            f"status must be one of {', '.join(APPROVAL_STATUSES)}, 'answered' or None, "
            f"got {status!r}"
        )
    order = _ORDERS[status]
    statuses: tuple[ApprovalStatus, ...] | None
    if status is None:
        statuses = None
    elif status == "answered":
        statuses = ANSWERED
    else:
        statuses = (cast(ApprovalStatus, status),)
    for name, value in (("hook", hook), ("middleware", middleware), ("session_id", session_id)):
        if value is not None and (not isinstance(value, str) or not value):
            fail(f"{name} must be a non-empty str or None, got {value!r}")
    if asked_before is not None and (
        not isinstance(asked_before, datetime) or asked_before.tzinfo is None
    ):
        fail(f"asked_before must be a timezone-aware datetime or None, got {asked_before!r}")
    return Query(
        statuses=statuses,
        hook=cast(str | None, hook),
        middleware=cast(str | None, middleware),
        session_id=cast(str | None, session_id),
        asked_before=None if asked_before is None else asked_before.astimezone(UTC),
        limit=check_limit(limit, _LIST),
        order=order,
        after=None if after is None else decode_cursor(after, order, _LIST),
    )
