"""Shared pieces of the policy tests: a refund agent, and middleware built to order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, SessionStore, tool
from stageware.policy import (
    HookPoint,
    MiddlewareDef,
    Outcome,
    PolicyEngine,
    PolicyEntry,
    PolicyEnv,
    middleware,
)
from tests.policy.approvers import authenticator


class Ledger:
    """A refund tool that records every payout, to count executions."""

    def __init__(self) -> None:
        self.payouts: list[int] = []

        @tool
        def refund(amount: int) -> str:
            """Refund an amount to the customer."""
            self.payouts.append(amount)
            return f"refunded {amount}"

        self.tool = refund


def refund_script(amount: int = 50, *, answer: str = "Refund done.") -> list[Any]:
    """One tool call (``t1``), then a text answer."""
    return [
        ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": amount}, id="t1")]),
        answer,
    ]


def refund_agent(
    *entries: PolicyEntry | MiddlewareDef,
    script: Sequence[Any] | None = None,
    ledger: Ledger | None = None,
    store: SessionStore | None = None,
    session_id: str | None = None,
    backend: str = "asyncio",
    **engine_options: Any,
) -> tuple[Agent, Ledger, ScriptedModel]:
    ledger = ledger if ledger is not None else Ledger()
    # The tests' authenticator, unless a test sets its own (or None).
    engine_options.setdefault("authenticator", authenticator())
    model = ScriptedModel(refund_script() if script is None else script, chunk_size=4)
    agent = Agent(
        model,
        tools=[ledger.tool],
        policy=PolicyEngine(entries, **engine_options),
        session_store=store,
        session_id=session_id,
        backend=backend,  # type: ignore[arg-type]
    )
    return agent, ledger, model


def deciding(
    point: HookPoint | str,
    decide: Callable[[Any, PolicyEnv], Outcome | None],
    *,
    name: str = "decider",
    fail_mode: str = "closed",
    band: str = "app",
    timeout: str | None = None,
    seen: list[Any] | None = None,
) -> MiddlewareDef:
    """A middleware at *point* that records what it saw and returns ``decide(event, env)``."""

    async def policy(event: Any, env: PolicyEnv) -> Outcome | None:
        if seen is not None:
            seen.append((event, env))
        return decide(event, env)

    return middleware(hooks=[point], fail_mode=fail_mode, band=band, timeout=timeout, name=name)(
        policy
    )
