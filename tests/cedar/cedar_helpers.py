"""Shared pieces of the Cedar tests: a refund tool with a nested input, policies, envs."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from stageware import tool
from stageware.cedar import cedar_policy
from stageware.policy import Band, HookPoint, Outcome, PolicyEnv, Principal

Handler = Callable[[Any, PolicyEnv], Awaitable[Outcome | None]]


class Address(BaseModel):
    """Where an order goes."""

    country: str
    postcode: str | None = None


class Order(BaseModel):
    """An order to refund."""

    id: str
    address: Address
    tags: list[str] = []


@tool
def refund(order: Order, amount: float, express: bool = False) -> str:
    """Refund an order.

    Args:
        order: The order.
        amount: How much, in euros.
        express: Pay out today.
    """
    return f"refunded {amount} on {order.id}"


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


POLICIES = """\
// Finance may refund up to 100 euros; nobody refunds to a sanctioned country.
@id("finance-refunds")
permit(principal in Role::"finance", action == Action::"tool:refund", resource)
when { context.input.amount.lessThanOrEqual(decimal("100.0")) };

@id("no-sanctioned-countries")
forbid(principal, action == Action::"tool:refund", resource)
when { context.input.order.address.country == "XX" };

@id("anyone-looks-up")
permit(principal, action == Action::"tool:lookup", resource);

@id("approved-models")
permit(principal, action == Action::"route.select", resource)
when { ["scripted", "small"].contains(context.model_id) };

@id("short-input")
permit(principal, action == Action::"input.received", resource)
when { context.characters <= 200 };

@id("no-secrets")
forbid(principal, action == Action::"input.received", resource)
when { context.text like "*password*" };

@id("contractors-read-only")
forbid(principal, action in Action::"tool.before", resource)
when {
  principal is User && principal has employment && principal.employment == "contractor" &&
  action != Action::"tool:lookup"
};
"""

ATTRIBUTES: dict[str, Any] = {
    "type": "object",
    "properties": {"employment": {"type": "string"}},
}

DANA = Principal("dana", frozenset({"finance"}), {"employment": "staff"})
"""A finance user."""
ERIN = Principal("erin", frozenset({"support"}), {"employment": "staff"})
"""A user without the finance role."""
CARL = Principal("carl", frozenset({"finance"}), {"employment": "contractor"})
"""A finance contractor: read-only."""


def settings(**changes: Any) -> dict[str, Any]:
    """The tests' settings of ``cedar_policy``, with *changes*."""
    return {
        "tools": [refund, lookup],
        "policy_text": POLICIES,
        "principal_attributes": ATTRIBUTES,
        **changes,
    }


def built(**changes: Any) -> Handler:
    """``cedar_policy`` built with the tests' settings."""
    return cedar_policy.build(settings(**changes))


def env(hook: HookPoint, principal: Principal | None, *, attempt: int = 1) -> PolicyEnv:
    """The env the engine gives a call at *hook* for *principal*."""
    return PolicyEnv(
        run_id="run-1",
        session_id="session-1",
        agent_name="desk",
        hook=hook,
        middleware="cedar",
        band=Band.GUARDRAIL,
        attempt=attempt,
        logger=logging.getLogger("stageware.policy.cedar"),
        principal=principal,
    )


def refund_input(amount: float = 50, country: str = "FR") -> dict[str, Any]:
    """A refund tool input."""
    return {"order": {"id": "o-1", "address": {"country": country}}, "amount": amount}
