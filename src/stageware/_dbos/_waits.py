"""A durable run's wait for a human: approvals to be answered, an escalation resolved.

An invocation that stopped on interrupts (a policy ``Suspend``) or ended ``escalated``
leaves its workflow waiting here, for hours or days if need be: the workflow holds no
worker, only a row in DBOS's system database, and a worker that dies while it waits is
replaced by recovery, which hands back every check and receive already recorded.

The session store stays the truth: the wait reads it, it does not receive answers. Each
round is one DBOS step that loads the session and reports what still waits and, for the
approvals that have a deadline (``Suspend(timeout=...)``), how long until the earliest; then
``DBOS.recv_async`` waits for a wake-up message (``_wake``), at most ``RECHECK_SECONDS``
or until that deadline. So an answer given without a wake-up (the command line run
without ``--dbos``, a resume on another path) is still found within the re-check interval,
and a wake-up with nothing stored behind it (anyone can send one) releases nothing: the
next round finds the same approvals waiting and waits again.

The clock is read in the step only (its result is recorded), so a replay takes the same
rounds as the first run did.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from stageware._host._interrupt_state import InterruptState
from stageware._policy._approval import parse_interrupt_id
from stageware._policy._timeouts import deadline_of

from ._wake import WAKE_TOPIC

if TYPE_CHECKING:
    from dbos import StepOptions

    from stageware import Agent, AgentResult, SessionStore

__all__ = ["RECHECK_SECONDS", "WAITED_FOR", "session_of", "wait_for_answers", "wait_for_session"]

logger = logging.getLogger("stageware.dbos")

RECHECK_SECONDS: Final = 60.0
"""How often a waiting run reads its session with no wake-up: an answer recorded without
one is acted on within this long."""

_READ_RETRIES: Final[StepOptions] = {
    "retries_allowed": True,
    "interval_seconds": 1.0,
    "backoff_rate": 2.0,
    "max_attempts": 10,
}
"""A read of the session that fails (the database restarting) is tried again, for about
17 minutes, before the wait gives up and the request fails: a wait is meant to last."""

WAITED_FOR: Final = frozenset({"interrupt", "escalated"})
"""The stops that wait for a human."""


async def wait_for_answers(
    agent: Agent,
    result: AgentResult[Any],
    *,
    workflow_id: str,
    recheck_seconds: float = RECHECK_SECONDS,
) -> None:
    """Wait, inside the workflow *workflow_id*, until *result*'s stop is settled.

    After ``stop_reason="interrupt"``: until no interrupt of the session waits for an
    answer, or the earliest approval deadline has passed (the caller then continues the
    run with ``agent()``; what timed out is blocked or escalated as its policy declared).
    After ``"escalated"``: until the escalation is resolved; the run is over, and the
    session takes new prompts again. Any other stop returns at once.

    Raises:
        ValueError: The agent has no session store: nothing would hold the answers.
    """
    stop = str(result.stop_reason)
    if stop not in WAITED_FOR:
        return
    store, session_id = session_of(agent, f"workflow {workflow_id!r}")
    await wait_for_session(
        store,
        session_id,
        stop,
        None if result.halt is None else result.halt.escalation_id,
        workflow_id=workflow_id,
        recheck_seconds=recheck_seconds,
    )


async def wait_for_session(
    store: SessionStore,
    session_id: str,
    stop_reason: str,
    escalation_id: str | None,
    *,
    workflow_id: str,
    recheck_seconds: float = RECHECK_SECONDS,
) -> None:
    """``wait_for_answers`` for a run known by its session and how it stopped, as a
    workflow that recorded only those (not the ``AgentResult``) has them on a replay."""
    from dbos import DBOS

    if stop_reason not in WAITED_FOR:
        return
    while True:
        if stop_reason == "escalated":
            open_ = await DBOS.run_step_async(
                {"name": "stageware:escalation", **_READ_RETRIES},
                _escalation_open,
                store,
                session_id,
                escalation_id,
            )
            if not open_:
                return
            wait = recheck_seconds
        else:
            waiting, left = await DBOS.run_step_async(
                {"name": "stageware:approvals", **_READ_RETRIES},
                _approvals_waiting,
                store,
                session_id,
            )
            if waiting == 0 or (left is not None and left <= 0):
                return
            wait = recheck_seconds if left is None else min(recheck_seconds, left)
        logger.debug("%s waits %.1fs for session %r", workflow_id, wait, session_id)
        await DBOS.recv_async(WAKE_TOPIC, timeout_seconds=wait)


def session_of(agent: Agent, where: str, session_id: str | None = None) -> tuple[SessionStore, str]:
    """The store *agent* saves its session to, and the session's id.

    A durable run reads the store the agent saves to (the public Agent does not hand out
    its store). *where* names the caller in the error; given *session_id*, the agent must
    be on that session (a factory that built it for another one is a mistake).

    Raises:
        ValueError: The agent has no session store, or is on another session.
    """
    session = agent._core.session  # pyright: ignore[reportPrivateUsage]
    if session is None or session_id not in (None, session.id):
        found = "no session store" if session is None else f"session id {session.id!r}"
        wanted = "" if session_id is None else f" for session {session_id!r}"
        raise ValueError(
            f"{where}: agent {agent.name!r} has {found}{wanted}, so the answers and saves "
            "of a durable run would have nowhere to go; build it with session_store=... "
            "and session_id=..."
        )
    return session.store, session.id


def _escalation_open(store: SessionStore, session_id: str, escalation_id: str | None) -> bool:
    """Whether the run's escalation (or, unnamed, any of the session's) is unresolved."""
    escalation = store.open_escalation(session_id)
    return escalation is not None and escalation_id in {None, escalation.id}


def _approvals_waiting(store: SessionStore, session_id: str) -> tuple[int, float | None]:
    """How many interrupts of the session wait for an answer, and the seconds until the
    earliest policy deadline among them (``None``: none has one)."""
    stored = store.load(session_id)
    if stored is None:
        return 0, None
    state = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    waiting = state.pending() if state.activated else []
    now = datetime.now(UTC)
    left: float | None = None
    for interrupt in waiting:
        reason = interrupt.reason
        if parse_interrupt_id(interrupt.id) is None or not isinstance(reason, dict):
            continue
        deadline = deadline_of(reason)  # pyright: ignore[reportUnknownArgumentType]
        if deadline is not None:
            seconds = (deadline - now).total_seconds()
            left = seconds if left is None else min(left, seconds)
    return len(waiting), left
