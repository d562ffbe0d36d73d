"""Escalations: a run handed to a human queue, and the rules for claiming and resolving one.

A policy middleware that returns ``Escalate(reason, queue=...)`` ends the run; the host
writes an ``Escalation`` with the session's final save, in the same transaction (see
``SessionStore.save``), and from then on the session takes no new prompt
(``SessionEscalatedError``) until a human resolves the escalation through the store.

A record moves one way only: ``open`` -> ``claimed`` -> ``resolved``, or ``open`` ->
``resolved``. ``claim`` and ``resolve`` below are that rule, applied by every store to
the record it read in the same transaction as its write, as ``check_write`` is for saves:
so a memory, SQLite or Postgres store refuses the same things with the same messages.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, cast, final

from stageware._host._shorten import shorten

from ._encoding import json_problem
from ._store import SessionError

__all__ = [
    "ESCALATION_STATUSES",
    "Escalation",
    "EscalationError",
    "EscalationPage",
    "EscalationStatus",
    "SessionEscalatedError",
    "already_escalated",
    "check_claim",
    "check_listing",
    "check_new",
    "check_resolution",
    "claim",
    "duplicate",
    "resolve",
    "text_problem",
    "unknown",
]

EscalationStatus = Literal["open", "claimed", "resolved"]

ESCALATION_STATUSES: Final[tuple[EscalationStatus, ...]] = ("open", "claimed", "resolved")
"""Every status, in the order a record moves through them."""


@final
@dataclass(frozen=True, slots=True)
class EscalationPage:
    """One page of ``SessionStore.escalation_page``.

    Attributes:
        entries: At most the ``limit`` asked for, oldest first.
        total: How many escalations match the filters, over all pages.
        next_cursor: Pass as ``after`` for the next page; ``None`` on the last page. Opaque.
    """

    entries: list[Escalation]
    total: int
    next_cursor: str | None


# Reasons are free text from a middleware; messages quote them only this far.
_REASON_IN_MESSAGES: Final = 200


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    """A run a policy middleware handed to a human queue, as the session store keeps it.

    Attributes:
        id: The escalation's key (a uuid4, in hex).
        session_id: The session whose run escalated; it takes no new prompt until this
            escalation is resolved.
        queue: The human queue it waits in (``Escalate(queue=...)``).
        hook: The hook point where the middleware escalated (``"tool.before"``).
        middleware: The name of the middleware that escalated.
        reason: Why, in the middleware's words.
        event: The hook event the middleware saw, as JSON data.
        created_at: When the run escalated (timezone-aware, UTC).
        status: ``open``, then ``claimed`` once a human took it, ``resolved`` at the end.
        claimed_by: Who claimed it, if anyone did.
        claimed_at: When, by the store's clock.
        resolved_by: Who resolved it.
        resolved_at: When, by the store's clock.
        resolution: What the human decided, in their words (``"refunded by hand"``).
        comment: Anything else the human wanted on the record.
    """

    id: str
    session_id: str
    queue: str
    hook: str
    middleware: str
    reason: str
    event: dict[str, Any]
    created_at: datetime
    status: EscalationStatus = "open"
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    resolution: str | None = None
    comment: str | None = None

    @classmethod
    def new(
        cls,
        session_id: str,
        *,
        queue: str,
        hook: str,
        middleware: str,
        reason: str,
        event: dict[str, Any],
    ) -> Escalation:
        """An open escalation of *session_id*, made now, with a fresh id.

        The values are checked here, where the escalation is made, rather than when the
        store writes it at the end of the run: a value no store can keep would otherwise
        surface as a failed final save.

        Raises:
            ValueError: A text is empty (queue, hook, middleware, session id) or holds
                what no store can keep (a NUL, a lone surrogate), or *event* is not JSON
                data.
        """
        texts = {
            "session_id": session_id,
            "queue": queue,
            "hook": hook,
            "middleware": middleware,
            "reason": reason,
        }
        for name, value in texts.items():
            problem = text_problem(value, name, empty_allowed=name == "reason")
            if problem is not None:
                raise ValueError(f"cannot make an escalation: {problem}")
        given: object = cast(object, event)
        problem = json_problem(given, "the event")
        if problem is None and not isinstance(given, dict):
            problem = f"the event is a {type(given).__qualname__}, not a JSON object"
        if problem is not None:
            raise ValueError(f"cannot make an escalation: {problem}")
        return cls(
            id=uuid.uuid4().hex,
            session_id=session_id,
            queue=queue,
            hook=hook,
            middleware=middleware,
            reason=reason,
            # A copy: the record is what the middleware saw, whatever the caller does next.
            event=copy.deepcopy(event),
            created_at=datetime.now(UTC),
        )

    @property
    def unresolved(self) -> bool:
        """Whether the escalation still holds its session (open or claimed)."""
        return self.status != "resolved"


class EscalationError(SessionError):
    """An escalation could not be claimed or resolved.

    Its id is unknown, another human claimed it, or it was resolved already. Nothing was
    written.

    Attributes:
        escalation_id: The id that was asked for.
        escalation: The record as the store holds it; ``None`` for an unknown id.
    """

    def __init__(self, message: str, *, escalation_id: str, escalation: Escalation | None) -> None:
        super().__init__(message)
        self.escalation_id = escalation_id
        self.escalation = escalation


@final
class SessionEscalatedError(SessionError):
    """The session waits for a human to resolve an escalation, so it takes no prompt.

    Raised when an invocation starts, before anything runs or is saved. Resolve the
    escalation through the store (``store.resolve_escalation``, or ``stageware policy
    escalations --resolve``), then invoke the agent again.

    Attributes:
        escalation: The escalation the session waits on.
    """

    def __init__(self, escalation: Escalation) -> None:
        super().__init__(
            f"session {escalation.session_id!r} waits for a human: escalation "
            f"{escalation.id} in queue {escalation.queue!r} ({escalation.middleware} at "
            f"{escalation.hook}: {shorten(escalation.reason, _REASON_IN_MESSAGES)!r}) is "
            f"{escalation.status}. The session takes no new prompt until it is resolved: "
            f"store.resolve_escalation({escalation.id!r}, by=..., resolution=...), or "
            f"`stageware policy escalations --store URL --resolve {escalation.id} --by NAME "
            "--resolution TEXT`"
        )
        self.escalation = escalation


def text_problem(value: object, name: str, *, empty_allowed: bool = False) -> str | None:
    """Say why *value* cannot be kept as the text *name*, or return ``None`` if it can.

    Every store keeps an escalation's texts as database text: Postgres refuses a NUL in
    text, and neither database takes a lone surrogate as UTF-8.
    """
    if not isinstance(value, str):
        return f"{name} must be a str, got {type(value).__qualname__}"
    if not value and not empty_allowed:
        return f"{name} must not be empty"
    if "\x00" in value:
        return f"{name} contains a NUL character, which no store can keep in text"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return (
            f"{name} has a lone surrogate at position {error.start}, which is not valid UTF-8 text"
        )
    return None


def check_new(escalation: Escalation, session_id: str, what: str) -> None:
    """Refuse to record *escalation* with a save of *session_id*, unless it is a new one.

    *what* says what the store was doing (``"save session 's1' in sessions.db"``).

    Raises:
        SessionError: It belongs to another session, or is not open.
    """
    if escalation.session_id != session_id:
        raise SessionError(
            f"cannot {what}: escalation {escalation.id!r} is of session "
            f"{escalation.session_id!r}; nothing was written"
        )
    if escalation.status != "open":
        raise SessionError(
            f"cannot {what}: a save records a new escalation, which is open; "
            f"escalation {escalation.id!r} is {escalation.status}; nothing was written"
        )


def duplicate(escalation_id: str, what: str) -> SessionError:
    """The error for a save that records an escalation under an id the store holds."""
    return SessionError(
        f"cannot {what}: an escalation with id {escalation_id!r} exists already; "
        "nothing was written"
    )


def already_escalated(pending: Escalation, what: str) -> SessionError:
    """The error for a save that would give a session a second unresolved escalation."""
    return SessionError(
        f"cannot {what}: the session already waits on escalation {pending.id} "
        f"({pending.status}, queue {pending.queue!r}), and a session has one unresolved "
        "escalation at a time; nothing was written"
    )


def check_claim(escalation_id: object, by: object) -> None:
    """Refuse arguments of ``claim_escalation`` that no store could act on.

    Raises:
        SessionError: Naming the argument.
    """
    _check_texts(f"claim escalation {escalation_id!r}", escalation_id=escalation_id, by=by)


def check_resolution(
    escalation_id: object, by: object, resolution: object, comment: object
) -> None:
    """Refuse arguments of ``resolve_escalation`` that no store could act on or keep.

    Raises:
        SessionError: Naming the argument.
    """
    texts: dict[str, object] = {"escalation_id": escalation_id, "by": by, "resolution": resolution}
    if comment is not None:
        texts["comment"] = comment
    _check_texts(f"resolve escalation {escalation_id!r}", **texts)


def check_listing(queue: object, status: object) -> None:
    """Refuse filters of ``escalations`` that match nothing because they are malformed.

    Raises:
        SessionError: A queue that is not text, or a status that is not one of
            ``ESCALATION_STATUSES``.
    """
    if queue is not None:
        _check_texts("list escalations", queue=queue)
    if status is not None and status not in ESCALATION_STATUSES:
        raise SessionError(
            f"cannot list escalations: status must be one of {', '.join(ESCALATION_STATUSES)}, "
            f"got {status!r}"
        )


def _check_texts(what: str, **texts: object) -> None:
    for name, value in texts.items():
        problem = text_problem(value, name, empty_allowed=name == "comment")
        if problem is not None:
            raise SessionError(f"cannot {what}: {problem}")


def claim(escalation: Escalation, *, by: str, now: datetime, where: str) -> Escalation:
    """The escalation claimed by *by*: what a store writes for ``claim_escalation``.

    Claiming one's own claim again returns it unchanged, so a human whose first attempt
    timed out can simply retry.

    Raises:
        EscalationError: Another human claimed it, or it was resolved.
    """
    if escalation.status == "resolved":
        raise _already_resolved(escalation, "claim", where)
    if escalation.status == "claimed":
        if escalation.claimed_by == by:
            return escalation
        raise _claimed_by_another(escalation, "claim", by, where)
    return dataclasses.replace(escalation, status="claimed", claimed_by=by, claimed_at=now)


def resolve(
    escalation: Escalation,
    *,
    by: str,
    resolution: str,
    comment: str | None,
    take_over: bool,
    now: datetime,
    where: str,
) -> Escalation:
    """The escalation resolved by *by*: what a store writes for ``resolve_escalation``.

    An open escalation may be resolved by anyone, without claiming it first. One that
    another human claimed is theirs: it is refused unless *take_over* says the resolver
    means to override the claim (the claimer left, say); the record then keeps who had
    claimed it beside who resolved it.

    Raises:
        EscalationError: It was resolved already, or another human claimed it and
            *take_over* is false.
    """
    if escalation.status == "resolved":
        raise _already_resolved(escalation, "resolve", where)
    if escalation.status == "claimed" and escalation.claimed_by != by and not take_over:
        raise _claimed_by_another(escalation, "resolve", by, where)
    return dataclasses.replace(
        escalation,
        status="resolved",
        resolved_by=by,
        resolved_at=now,
        resolution=resolution,
        comment=comment,
    )


def unknown(escalation_id: str, verb: str, where: str) -> EscalationError:
    """The error for an escalation id the store does not hold."""
    return EscalationError(
        f"cannot {verb} escalation {escalation_id!r}: {where} holds no escalation with that id",
        escalation_id=escalation_id,
        escalation=None,
    )


def _already_resolved(escalation: Escalation, verb: str, where: str) -> EscalationError:
    when = _when(escalation.resolved_at)
    return EscalationError(
        f"cannot {verb} escalation {escalation.id!r} in {where}: {escalation.resolved_by!r} "
        f"resolved it already{when} ({escalation.resolution!r}); nothing was written",
        escalation_id=escalation.id,
        escalation=escalation,
    )


def _claimed_by_another(escalation: Escalation, verb: str, by: str, where: str) -> EscalationError:
    when = _when(escalation.claimed_at)
    hint = (
        "; to resolve it in their place, pass take_over=True (--take-over)"
        if verb == "resolve"
        else ""
    )
    return EscalationError(
        f"cannot {verb} escalation {escalation.id!r} in {where} as {by!r}: "
        f"{escalation.claimed_by!r} claimed it{when}; nothing was written{hint}",
        escalation_id=escalation.id,
        escalation=escalation,
    )


def _when(moment: datetime | None) -> str:
    return "" if moment is None else f" at {moment.isoformat(timespec='seconds')}"
