"""The approvals ledger: every policy approval a session asked for, and what became of it.

A policy ``Suspend`` stops a run on an interrupt whose id starts with ``v2:policy:``; the
answer, once verified, is stored as that interrupt's response, and the whole interrupt
leaves the session's interrupt state when its cycle ends. The ledger is what a store keeps
of those interrupts beyond that: one entry per (session, interrupt id), written by
``save()`` in the same transaction as the snapshot, derived from
``snapshot["interrupt_state"]`` (``observe``), and read back in pages
(``SessionStore.approvals``, checked and ordered by ``_approval_listing``) so that a
console lists thousands of pending approvals without loading a session.

The rules every store applies at a save (``settle`` is them, for the memory store; the
database stores write the same in SQL):

- every ``v2:policy:`` interrupt in the saved state is upserted: a new one is entered with
  the save's time as ``asked_at``; one whose stored response is a verified approval record
  becomes ``approved`` or ``denied`` with the approver's verified identity, one whose
  response is a timeout record becomes ``lapsed``. An answered entry never changes again
  (answers are final), and a pending one keeps its first ``asked_at``.
- an entry still ``pending`` whose interrupt is no longer in the saved state (its cycle was
  abandoned: the run was continued without answering it, or the state was replaced)
  becomes ``lapsed``, with the save's time as ``answered_at`` and no approver: nobody may
  answer it any more, and keeping it ``pending`` would list it for ever. Entries are never
  deleted because their interrupt left the state (they are the audit); they go with the
  session (``delete``).
- a save whose state holds no policy interrupt, of a session with no pending entry, does
  not touch the ledger: the stores keep a per-session flag of pending entries, read with
  the version the save checks anyway.

This module is in the sessions layer, which may not import the policy layer: it reads the
interrupt id and the records as the plain JSON the policy layer writes
(``_policy/_approval.py``, ``_policy/_timeouts.py``); a test checks that the two agree.
Who may read the ledger is whoever may read the store: the entries hold what the step
would do (a tool's input), as the sessions do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, LiteralString, NoReturn, cast, final

from ._escalation_rows import read_time
from ._store import SessionError

__all__ = [
    "ANSWERED",
    "APPROVAL_COLUMNS",
    "APPROVAL_STATUSES",
    "ApprovalEntry",
    "ApprovalListing",
    "ApprovalPage",
    "ApprovalRow",
    "ApprovalStatus",
    "Observed",
    "entry_from_row",
    "lapse",
    "observe",
    "observe_document",
    "parse_policy_id",
    "settle",
]

ApprovalStatus = Literal["pending", "approved", "denied", "lapsed"]

ApprovalListing = ApprovalStatus | Literal["answered"] | None
"""What ``SessionStore.approvals`` filters on: a status, ``"answered"`` (approved, denied
or lapsed) or ``None`` (any)."""

APPROVAL_STATUSES: Final[tuple[ApprovalStatus, ...]] = ("pending", "approved", "denied", "lapsed")
"""Every status; an entry moves from ``pending`` to one of the other three, once."""

ANSWERED: Final[tuple[ApprovalStatus, ...]] = ("approved", "denied", "lapsed")
"""The statuses of ``"answered"``: every entry with an ``answered_at``."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalEntry:
    """A policy approval (an interrupt whose id starts with ``v2:policy:``) as a store's
    ledger keeps it.

    Attributes:
        session_id: The session whose run asked.
        interrupt_id: The interrupt's id, ``v2:policy:<hook>:<middleware>:<step>#<16 hex>``.
        hook: The hook point where the middleware suspended (``"tool.before"``), from the id.
        middleware: The name of the middleware that suspended, from the id.
        reason: The interrupt's reason as the ``Suspend`` wrote it (``reason``,
            ``details``, ``step``, ``approvers``, ``deadline``, ``on_timeout``,
            ``fingerprint``...), JSON data.
        asked_at: When the first save that held it pending was made (UTC, store's clock).
        status: ``pending`` until answered; ``approved`` or ``denied`` by a verified
            approver; ``lapsed`` when it timed out, or left the session unanswered.
        answered_by: The verified approver's id, for ``approved`` and ``denied``.
        roles: The approver's roles, as verified.
        via: How the approver was verified (``"os-user"``, an authenticator's name).
        comment: What the approver said, if anything.
        answered_at: When it was answered, timed out or left the session (UTC).
    """

    session_id: str
    interrupt_id: str
    hook: str
    middleware: str
    reason: Mapping[str, Any]
    asked_at: datetime
    status: ApprovalStatus
    answered_by: str | None = None
    roles: tuple[str, ...] = ()
    via: str | None = None
    comment: str | None = None
    answered_at: datetime | None = None


@final
@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """One page of ``SessionStore.approvals``.

    Attributes:
        entries: At most the ``limit`` asked for, in the listing's order.
        total: How many entries match the filters, over all pages.
        next_cursor: Pass as ``after`` for the next page; ``None`` on the last page. Opaque.
    """

    entries: list[ApprovalEntry]
    total: int
    next_cursor: str | None


POLICY_PREFIX: Final = "v2:policy:"
_STATUS_OF: Final[dict[object, ApprovalStatus]] = {name: name for name in APPROVAL_STATUSES}
_SHORT: Final = 16

# LiteralString, so that the database stores may compose their statements from them.
APPROVAL_COLUMNS: Final[tuple[LiteralString, ...]] = (
    "session_id",
    "interrupt_id",
    "hook",
    "middleware",
    "reason",
    "asked_at",
    "status",
    "answered_by",
    "roles",
    "via",
    "comment",
    "answered_at",
)
"""The columns of a ledger row, in the order of ``ApprovalRow``; ``reason`` and ``roles``
are JSON text."""

ApprovalRow = tuple[
    str,
    str,
    str,
    str,
    str,
    datetime,
    str,
    str | None,
    str,
    str | None,
    str | None,
    datetime | None,
]


def parse_policy_id(interrupt_id: str) -> tuple[str, str] | None:
    """The hook point and middleware a ``v2:policy:`` interrupt id names, or ``None``.

    The same reading as the policy layer's ``parse_interrupt_id``:
    ``v2:policy:<hook>:<middleware>:<step>#<16 hex>``, the step being the rest.
    """
    if not interrupt_id.startswith(POLICY_PREFIX):
        return None
    key, hash_sign, short = interrupt_id.rpartition("#")
    parts = key[len(POLICY_PREFIX) :].split(":", 2)
    if not hash_sign or len(parts) != 3 or len(short) != _SHORT:
        return None
    return parts[0], parts[1]


@final
@dataclass(frozen=True, slots=True)
class Observed:
    """What one save's interrupt state says of one policy approval.

    Attributes:
        interrupt_id: The interrupt's id.
        hook: From the id.
        middleware: From the id.
        reason: The interrupt's reason, as JSON text.
        status: ``pending``, or what the stored response makes it.
        answered_by: The verified approver (approved, denied).
        roles: Their roles, as JSON text (a list).
        via: How they were verified.
        comment: What they said.
        answered_at: When the record says it was answered or timed out.
    """

    interrupt_id: str
    hook: str
    middleware: str
    reason: str
    status: ApprovalStatus
    answered_by: str | None = None
    roles: str = "[]"
    via: str | None = None
    comment: str | None = None
    answered_at: datetime | None = None

    def row(self, session_id: str, asked_at: datetime, now: datetime) -> ApprovalRow:
        """The ledger row that enters this approval, asked at *asked_at*, saved at *now*
        (its ``answered_at`` when answered and the record states no time)."""
        return (
            session_id,
            self.interrupt_id,
            self.hook,
            self.middleware,
            self.reason,
            asked_at,
            self.status,
            self.answered_by,
            self.roles,
            self.via,
            self.comment,
            self.answered_at or (None if self.status == "pending" else now),
        )


def observe(interrupt_state: object) -> list[Observed]:
    """The policy approvals in a snapshot's interrupt state, in the state's order.

    *interrupt_state* is JSON data the store has checked (``encode_snapshot``), but its
    shape is the host's: anything that is not a ``v2:policy:`` interrupt of the shape
    ``InterruptState.to_dict`` writes is passed over. So is an id no database can key
    (a lone surrogate or a NUL character, which only a hand-made state holds).
    """
    if not isinstance(interrupt_state, dict):
        return []
    interrupts = cast(dict[str, Any], interrupt_state).get("interrupts")
    if not isinstance(interrupts, list):
        return []
    found: dict[str, Observed] = {}
    for item in cast(list[object], interrupts):
        if not isinstance(item, dict):
            continue
        interrupt = cast(dict[str, Any], item)
        interrupt_id = interrupt.get("id")
        if not isinstance(interrupt_id, str) or not _storable(interrupt_id):
            continue
        parsed = parse_policy_id(interrupt_id)
        if parsed is None:
            continue
        reason: object = interrupt.get("reason")
        found[interrupt_id] = _answer(
            interrupt_id,
            parsed,
            json.dumps(reason if isinstance(reason, dict) else {}, separators=(",", ":")),
            interrupt.get("response"),
        )
    return list(found.values())


def observe_document(document: object) -> list[Observed]:
    """The policy approvals in a stored session document (the snapshot without its
    messages, as JSON text), for the stores' migrations; none if it is no JSON."""
    try:
        decoded: object = json.loads(str(document))
    except (ValueError, RecursionError):
        return []
    if not isinstance(decoded, dict):
        return []
    return observe(cast(dict[str, object], decoded).get("interrupt_state"))


def _answer(interrupt_id: str, parsed: tuple[str, str], reason: str, response: object) -> Observed:
    """The approval as its stored response makes it: see ``ApprovalRecord.to_json`` and
    ``TimeoutRecord.to_json`` in the policy layer."""
    hook, middleware = parsed
    pending = Observed(interrupt_id, hook, middleware, reason, "pending")
    if not isinstance(response, dict):
        return pending
    record = cast(dict[str, Any], response)
    fingerprint = record.get("fingerprint")
    if not (
        isinstance(fingerprint, str) and fingerprint.startswith(interrupt_id.rpartition("#")[2])
    ):
        # A record for another step (or none the policy wrote): the policy would not
        # accept it as this step's answer, so neither does the ledger.
        return pending
    if record.get("timed_out") is True:
        return Observed(
            interrupt_id,
            hook,
            middleware,
            reason,
            "lapsed",
            answered_at=_record_time(record.get("recorded_at")),
        )
    approver, roles, via = record.get("approver"), record.get("roles"), record.get("via")
    approved, comment = record.get("approved"), record.get("comment")
    if not (
        isinstance(approved, bool)
        and isinstance(approver, str)
        and isinstance(via, str)
        and isinstance(roles, list)
        and (comment is None or isinstance(comment, str))
    ):
        # Not a verified record: the store cannot tell what it is, so the approval stays
        # pending, and lapses if it leaves the state so.
        return pending
    return Observed(
        interrupt_id,
        hook,
        middleware,
        reason,
        "approved" if approved else "denied",
        answered_by=_text(approver),
        roles=json.dumps([str(role) for role in cast(list[object], roles)]),
        via=_text(via),
        comment=None if comment is None else _text(comment),
        answered_at=_record_time(record.get("answered_at")),
    )


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _text(text: str) -> str:
    """*text*, with what no database keeps as text (lone surrogates, NUL) escaped."""
    return (
        text
        if _storable(text)
        else text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    )


def _record_time(value: object) -> datetime | None:
    """The time a record states, in UTC; ``None`` if it states none (the store's clock
    stands in)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC)


def settle(
    rows: dict[str, ApprovalRow],
    session_id: str,
    observed: Sequence[Observed],
    now: datetime,
) -> None:
    """Apply one save to the ledger rows of *session_id* (keyed by interrupt id), in place.

    The memory store's form of the rules in the module docstring.
    """
    seen = {o.interrupt_id for o in observed}
    for interrupt_id, row in list(rows.items()):
        if row[6] == "pending" and interrupt_id not in seen:
            rows[interrupt_id] = lapse(row, now)
    for o in observed:
        held = rows.get(o.interrupt_id)
        if held is None:
            rows[o.interrupt_id] = o.row(session_id, now, now)
        elif held[6] == "pending" and o.status != "pending":
            rows[o.interrupt_id] = o.row(session_id, held[5], now)


def lapse(row: ApprovalRow, now: datetime) -> ApprovalRow:
    """*row*, pending, once its interrupt left the session unanswered at *now*."""
    return (*row[:6], "lapsed", None, "[]", None, None, now)


def entry_from_row(row: Sequence[object], where: str) -> ApprovalEntry:
    """The entry a stored row keeps; times may be ``datetime`` or ISO 8601 text.

    Raises:
        SessionError: The row is damaged (a hand edit, say): it names the approval and
            the column.
    """
    values: dict[str, object] = dict(zip(APPROVAL_COLUMNS, row, strict=True))

    def fail(problem: str) -> NoReturn:
        raise SessionError(
            f"approval {values['interrupt_id']!r} of session {values['session_id']!r} in "
            f"{where} is damaged: {problem}"
        )

    def text(column: str) -> str:
        value = values[column]
        if not isinstance(value, str):
            fail(f"column {column} holds {type(value).__qualname__}, not text")
        return value

    def optional(column: str) -> str | None:
        return None if values[column] is None else text(column)

    def time(column: str) -> datetime | None:
        return read_time(values[column], column, fail)

    def json_of(column: str, kind: type) -> Any:
        try:
            decoded: object = json.loads(text(column))
        except ValueError as exc:
            fail(f"column {column} is not valid JSON ({exc})")
        if not isinstance(decoded, kind):
            fail(f"column {column} holds a JSON {type(decoded).__qualname__}")
        return decoded

    status = _STATUS_OF.get(values["status"])
    if status is None:
        fail(f"column status holds {values['status']!r}, not one of {', '.join(APPROVAL_STATUSES)}")
    asked_at = time("asked_at")
    if asked_at is None:
        fail("column asked_at is empty")
    return ApprovalEntry(
        session_id=text("session_id"),
        interrupt_id=text("interrupt_id"),
        hook=text("hook"),
        middleware=text("middleware"),
        reason=cast(dict[str, Any], json_of("reason", dict)),
        asked_at=asked_at,
        status=status,
        answered_by=optional("answered_by"),
        roles=tuple(str(role) for role in cast(list[object], json_of("roles", list))),
        via=optional("via"),
        comment=optional("comment"),
        answered_at=time("answered_at"),
    )
