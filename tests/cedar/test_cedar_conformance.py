"""The Cedar middleware passes the policy conformance suite.

Once with its declared sample (which a plugin's own suite would run), and once with the
tests' policy set, tools and events that reach its permits, its forbids and its
refusals, on asyncio and trio. The suite's env carries no principal, so the second run
lets the agent be the principal (``anonymous="agent"``) for the policies to decide at all.
"""

from __future__ import annotations

import pytest

from stageware.cedar import cedar_policy
from stageware.conformance import Backend, check_middleware, conformance_test
from stageware.policy import InputEvent, RouteEvent, ToolCallEvent

from .cedar_helpers import POLICIES, refund_input, settings

test_sample_conforms = conformance_test(cedar_policy, backends=("asyncio", "trio"))

_AGENT_POLICIES = (
    POLICIES + '\npermit(principal is Agent, action == Action::"tool:refund", resource) '
    'when { context.input.amount.lessThan(decimal("10.0")) };\n'
)

_EVENTS = [
    ToolCallEvent(run_id="r", tool_name="refund", tool_use_id="t1", input=refund_input(5)),
    ToolCallEvent(run_id="r", tool_name="refund", tool_use_id="t2", input=refund_input(50)),
    ToolCallEvent(
        run_id="r", tool_name="refund", tool_use_id="t3", input=refund_input(5, country="XX")
    ),
    ToolCallEvent(run_id="r", tool_name="refund", tool_use_id="t4", input={"amount": "x"}),
    ToolCallEvent(run_id="r", tool_name="lookup", tool_use_id="t5", input={"order_id": "o"}),
    RouteEvent(run_id="r", model_id="small", tool_names=["refund"]),
    RouteEvent(run_id="r", model_id="large", tool_names=[]),
    InputEvent(run_id="r", messages=[{"role": "user", "content": [{"text": "hello"}]}]),
    InputEvent(run_id="r", messages=[{"role": "user", "content": [{"text": "my password"}]}]),
]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("on_deny", ["block", "guide"])
def test_a_real_policy_set_conforms(backend: Backend, on_deny: str) -> None:
    failures = check_middleware(
        cedar_policy,
        settings=settings(policy_text=_AGENT_POLICIES, anonymous="agent", on_deny=on_deny),
        events=_EVENTS,
        examples=25,
        backend=backend,
    )
    assert failures == []
