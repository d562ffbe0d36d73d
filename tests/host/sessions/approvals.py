"""Interrupt states holding policy approvals, as the host writes them, for the ledger tests.

The ids and records are made by the policy layer itself (``interrupt_id``,
``ApprovalRecord``, ``TimeoutRecord``), so that a test of the stores' reading of them
fails if the policy layer's format moves.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from stageware._host.sessions import SNAPSHOT_VERSION, SessionSnapshot, SessionStore
from stageware._policy._approval import ApprovalRecord, interrupt_id
from stageware._policy._timeouts import TimeoutRecord


def approval_id(step: str, *, hook: str = "tool.before", middleware: str = "refund_guard") -> str:
    """A ``v2:policy:`` id for *step*, bound to a fingerprint made from its parts."""
    digest = hashlib.sha256(f"{hook}|{middleware}|{step}".encode()).hexdigest()
    return interrupt_id(hook, middleware, step, digest)


def asked(identifier: str, **reason: Any) -> dict[str, Any]:
    """An unanswered policy interrupt, as ``InterruptState.to_dict`` writes one."""
    return {
        "id": identifier,
        "name": "policy",
        "reason": {
            "reason": "a refund over 500 needs a manager",
            "details": {"amount": 900},
            "step": {"tool": "refund", "input": {"amount": 900}},
            "approvers": ["manager"],
            "fingerprint": identifier.rpartition("#")[2] * 4,
            **reason,
        },
        "response": None,
        "agent_stream": False,
    }


def answered(
    identifier: str,
    *,
    approved: bool = True,
    by: str = "ana",
    roles: tuple[str, ...] = ("manager",),
    comment: str | None = "ok",
    at: str = "2026-05-01T10:00:00+00:00",
) -> dict[str, Any]:
    """The interrupt answered: its response is the verified record the policy layer stores."""
    record = ApprovalRecord(
        approved=approved,
        approver=by,
        roles=roles,
        via="authenticator",
        comment=comment,
        fingerprint=identifier.rpartition("#")[2] * 4,
        answered_at=at,
    )
    return {**asked(identifier), "response": record.to_json()}


def timed_out(identifier: str, *, at: str = "2026-05-01T11:00:00+00:00") -> dict[str, Any]:
    """The interrupt resolved by its timeout record."""
    record = TimeoutRecord(
        outcome="block",
        reason="nobody answered",
        queue="",
        deadline="2026-05-01T10:30:00+00:00",
        fingerprint=identifier.rpartition("#")[2] * 4,
        recorded_at=at,
    )
    return {**asked(identifier), "response": record.to_json()}


def with_interrupts(*interrupts: dict[str, Any]) -> SessionSnapshot:
    """A snapshot whose interrupt state holds *interrupts* (none: a plain session)."""
    return {
        "version": SNAPSHOT_VERSION,
        "messages": [],
        "state": {},
        "model_state": {},
        "interrupt_state": {
            "activated": bool(interrupts),
            "interrupts": list(interrupts),
            "pending_tool_execution": None,
            "pending_input": None,
            "cycle": 0,
        },
    }


def save(store: SessionStore, session_id: str, *interrupts: dict[str, Any]) -> int:
    """Save *session_id* with *interrupts* at its next version, as a worker would."""
    stored = store.load(session_id)
    return store.save(
        session_id,
        with_interrupts(*interrupts),
        expected_version=0 if stored is None else stored.version,
        owner="worker",
        lease_seconds=None,
    )


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)
