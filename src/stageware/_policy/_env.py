"""``PolicyEnv``: what a policy middleware is told about the step it decides on."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import final

from stageware._generated.policy_points import Band, HookPoint

from ._principal import Principal

__all__ = ["PolicyEnv"]


@final
@dataclass(frozen=True, slots=True)
class PolicyEnv:
    """The second argument of every policy handler: ``async def f(event, env)``.

    It carries only what the host can honour; everything about the step itself is in the
    event.

    Attributes:
        run_id: Id of the run (one agent invocation); the events carry it too.
        session_id: The agent's session id, or ``None`` for an agent without a session.
        agent_name: The agent's ``name``.
        hook: The hook point being decided.
        middleware: This middleware's name, as installed (``acme.no_weekend_refunds``).
        band: The band it runs in.
        attempt: 1 for the first try of the step, 2 after one ``Retry``, and so on.
        logger: A logger named for the middleware (``stageware.policy.<name>``).
        principal: Who the run acts for, as the application passed it when the run
            started (``invocation_state={PRINCIPAL_KEY: Principal(...)}``), or ``None``.
        notes: Notes for the trace; add with ``note``, read in the decision record.
    """

    run_id: str
    session_id: str | None
    agent_name: str
    hook: HookPoint
    middleware: str
    band: Band
    attempt: int
    logger: logging.Logger
    principal: Principal | None = None
    notes: list[str] = field(default_factory=list[str])

    def note(self, text: str) -> None:
        """Add *text* to this decision's trace record."""
        self.notes.append(str(text))
