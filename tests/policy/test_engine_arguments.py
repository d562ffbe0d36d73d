"""``PolicyEngine`` and ``PolicyEntry`` refuse what is not a declared middleware, naming it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stageware.policy import PolicyEngine, PolicyEntry, PolicyEnv, ToolCallEvent, middleware


async def refund_limits(event: ToolCallEvent, env: PolicyEnv) -> None:
    """An async function that was never decorated."""


class Gate:
    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> None:
        return None


declared = middleware(hooks=["tool.before"], fail_mode="closed")(refund_limits)
pending: Any = middleware(hooks=["tool.before"], fail_mode="closed")

# What untyped code, or code that ignored its checker, passes.
untyped_engine: Any = PolicyEngine
untyped_entry: Any = PolicyEntry

DECORATE = "decorate it with @middleware(hooks=[...], fail_mode=...)"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            refund_limits,
            f"PolicyEngine entry 1 is the function {__name__}.refund_limits, not a declared "
            f"middleware: {DECORATE}",
        ),
        (
            Gate,
            f"PolicyEngine entry 1 is the class {__name__}.Gate, not a declared middleware: "
            f"{DECORATE}",
        ),
        (
            "acme.refund_limits",
            "PolicyEngine entry 1 is the string 'acme.refund_limits', not a middleware: "
            "PolicyEngine takes declared middleware; a policy spec names middleware",
        ),
        (pending, "PolicyEngine entry 1 is what @middleware(...) returns, not yet applied"),
        (middleware, "PolicyEngine entry 1 is the @middleware decorator itself"),
        (42, "PolicyEngine entry 1 is int 42, not a declared middleware"),
    ],
    ids=["function", "class", "string", "pending decorator", "decorator", "number"],
)
def test_an_entry_that_is_not_a_declared_middleware_is_a_type_error_naming_it(
    given: object, message: str
) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        untyped_engine([declared, given])


def test_a_policy_entry_refuses_the_same_and_another_entry() -> None:
    with pytest.raises(TypeError, match=re.escape(f"is the function {__name__}.refund_limits")):
        untyped_entry(refund_limits)
    entry = PolicyEntry(declared)
    with pytest.raises(TypeError, match="PolicyEntry's middleware is a PolicyEntry"):
        untyped_entry(entry)


@pytest.mark.parametrize("given", [declared, PolicyEntry(declared), "refund_limits"])
def test_one_middleware_instead_of_a_list_is_a_type_error(given: object) -> None:
    with pytest.raises(
        TypeError, match=r"takes a list of middleware, got one: .*PolicyEngine\(\[\.\.\.\]\)"
    ):
        untyped_engine(given)


def test_declared_middleware_and_entries_are_accepted_together() -> None:
    other = middleware(hooks=["tool.before"], fail_mode="open", name="other")(refund_limits)

    engine = PolicyEngine([declared, PolicyEntry(other)])

    assert [entry.name for entry in engine.entries] == ["refund_limits", "other"]
