"""Refund policies of the Acme platform team: a stageware policy plugin, for the tests.

Its entry point ``acme = "acme_policies:MIDDLEWARE"`` contributes the three middleware
below as ``acme.no_weekend_refunds``, ``acme.refund_limit`` and ``acme.audit_tools``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from stageware.policy import (
    Block,
    Continue,
    PolicyEnv,
    ToolCallEvent,
    ToolResultEvent,
    middleware,
)

__all__ = ["MIDDLEWARE", "RefundLimit", "RefundLimitSettings", "audit_tools", "no_weekend_refunds"]

_WEEKEND = frozenset({"saturday", "sunday"})


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def no_weekend_refunds(event: ToolCallEvent, env: PolicyEnv) -> Block | None:
    """Refunds are not paid on a Saturday or a Sunday.

    The day is the refund's ``day`` input, as the booking system states it.
    """
    day = event.input.get("day", "") if isinstance(event.input, dict) else ""
    if event.tool_name == "refund" and str(day).lower() in _WEEKEND:
        return Block(f"no refunds on {day}")
    return None


class RefundLimitSettings(BaseModel):
    """How much one refund may pay out."""

    limit: int = Field(gt=0)
    currency: str = "EUR"


@middleware(
    hooks=["tool.before"],
    fail_mode="closed",
    timeout="1s",
    name="refund_limit",
    config=RefundLimitSettings,
    sample={"limit": 500},
)
class RefundLimit:
    """A refund over the configured limit is blocked."""

    def __init__(self, settings: RefundLimitSettings) -> None:
        self.settings = settings

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Block | None:
        amount = event.input.get("amount", 0) if isinstance(event.input, dict) else 0
        if event.tool_name == "refund" and amount > self.settings.limit:
            return Block(f"refund of {amount} {self.settings.currency} is over the limit")
        return None


@middleware(
    hooks=["tool.before", "tool.after"], fail_mode="open", timeout="5s", name="acme.audit_tools"
)
async def audit_tools(event: ToolCallEvent | ToolResultEvent, env: PolicyEnv) -> Continue:
    """Every tool call and its result go to the audit log; nothing is ever stopped."""
    env.note(f"audited {event.tool_name} ({event.tool_use_id}) at {env.hook.value}")
    return Continue()


MIDDLEWARE = (no_weekend_refunds, RefundLimit, audit_tools)
"""What the entry point contributes."""
