"""A middleware decides, traces and suspends under the name its declaration gives.

``@middleware(..., name="refund_limit")`` on class ``Gate``: the name is resolved once, at
declaration, and every record of the run (the decision, the env the handler sees, the
interrupt id of a Suspend) uses it, never the class's own name.
"""

from __future__ import annotations

from stageware.policy import MiddlewareDef, Outcome, PolicyEnv, Suspend, ToolCallEvent, middleware

from .policy_helpers import refund_agent

seen: list[PolicyEnv] = []


class Gate:
    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
        seen.append(env)
        return Suspend("needs a person")


# The call form: the one that is a MiddlewareDef under mypy as well (see the policies guide).
declared: MiddlewareDef = middleware(
    hooks=["tool.before"], fail_mode="closed", name="refund_limit"
)(Gate)


@middleware(hooks=["tool.before"], fail_mode="closed", name="refund_limit")
class DecoratedGate:
    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
        seen.append(env)
        return Suspend("needs a person")


def _assert_named_refund_limit(declaration: MiddlewareDef, class_name: str) -> None:
    seen.clear()
    agent, ledger, _ = refund_agent(declaration)

    result = agent("Refund order 1234")

    assert result.stop_reason == "interrupt"
    assert ledger.payouts == []
    [decision] = result.decisions
    assert decision.middleware == "refund_limit"
    assert [env.middleware for env in seen] == ["refund_limit"]
    [interrupt] = result.interrupts
    assert ":refund_limit:" in interrupt.id
    assert class_name not in interrupt.id
    assert class_name not in repr(decision)


def test_a_class_declared_with_a_call_uses_the_declared_name() -> None:
    assert declared.name == "refund_limit"
    _assert_named_refund_limit(declared, "Gate")


def test_a_decorated_class_uses_the_declared_name() -> None:
    # pyright sees a MiddlewareDef; mypy ignores class decorators (python/mypy#3135).
    decorated: object = DecoratedGate
    assert isinstance(decorated, MiddlewareDef)
    _assert_named_refund_limit(decorated, "DecoratedGate")
