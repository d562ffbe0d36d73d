"""Keyset paging, shared by the stores' paged listings (approvals, escalations).

A page ends at an entry; the next starts after that entry's place in the listing's order,
which is a time, then two texts that make it unique (``(asked_at, session_id,
interrupt_id)``, ``(created_at, escalation_id, "")``). The cursor is that place, encoded
(base64 of JSON, so that nobody builds one by hand), with the name of the order it belongs
to: a cursor of one listing passed to another is refused rather than silently misread.
Paging by place, not by offset, costs the same on the 200th page as on the first (an index
seek), and entries added between two pages never make the next one repeat or skip one.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Final, NoReturn, cast

from ._store import SessionError

__all__ = ["MAX_LIMIT", "Place", "check_limit", "decode_cursor", "encode_cursor"]

MAX_LIMIT: Final = 500
"""The largest page a listing hands out."""

Place = tuple[datetime, str, str]
"""Where an entry stands in a listing: its time (UTC), then two texts."""


def check_limit(limit: object, what: str) -> int:
    """*limit* if it is a page size from 1 to ``MAX_LIMIT``.

    Raises:
        SessionError: Saying what *what* (``"list approvals"``) needs.
    """
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise SessionError(
            f"cannot {what}: limit must be an int from 1 to {MAX_LIMIT}, got {limit!r}"
        )
    return limit


def encode_cursor(order: str, place: Place) -> str:
    """The cursor of the page that follows *place*, in the listing ordered by *order*."""
    moment, first, second = place
    data = [order, moment.isoformat(), first, second]
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def decode_cursor(cursor: object, order: str, what: str) -> Place:
    """The place a cursor of the listing ordered by *order* stands for.

    Raises:
        SessionError: *cursor* is not one that listing handed out.
    """

    def fail(problem: str) -> NoReturn:
        raise SessionError(
            f"cannot {what}: after={cursor!r} is not a cursor of this listing ({problem}); "
            "pass the next_cursor of a page listed with the same status"
        )

    if not isinstance(cursor, str):
        fail(f"a {type(cursor).__qualname__}, not a str")
    try:
        data: object = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        fail("it does not decode")
    if not (
        isinstance(data, list)
        and len(cast(list[object], data)) == 4
        and all(isinstance(part, str) for part in cast(list[object], data))
    ):
        fail("it does not decode")
    kind, moment, first, second = cast(list[str], data)
    if kind != order:
        fail(f"it pages a listing ordered by {kind!r}, this one is ordered by {order!r}")
    try:
        when = datetime.fromisoformat(moment)
    except ValueError:
        fail("its time does not decode")
    if when.tzinfo is None:
        fail("its time has no time zone")
    return when.astimezone(UTC), first, second
