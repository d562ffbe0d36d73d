"""What Cedar decides at each hook point it serves, called as the engine calls it.

Each hook point gets a permit, a refusal because no policy permits, and a ``forbid`` that
overrides a ``permit``; the principal is the verified ``Principal`` of the run, its roles
and attributes included; and what Cedar cannot type is refused or left to the fail mode.
"""

from __future__ import annotations

from typing import Any

import pytest

from stageware.cedar import CedarEvaluationError, CedarSettings
from stageware.policy import (
    Block,
    Guide,
    HookPoint,
    InputEvent,
    Principal,
    RouteEvent,
    ToolCallEvent,
)

from .cedar_helpers import CARL, DANA, ERIN, built, env, refund_input

pytestmark = pytest.mark.anyio


def _call(tool_input: Any, tool: str = "refund") -> ToolCallEvent:
    return ToolCallEvent(run_id="run-1", tool_name=tool, tool_use_id="t1", input=tool_input)


def _route(model_id: str) -> RouteEvent:
    return RouteEvent(run_id="run-1", model_id=model_id, tool_names=["refund", "lookup"])


def _input(text: str) -> InputEvent:
    return InputEvent(run_id="run-1", messages=[{"role": "user", "content": [{"text": text}]}])


# (hook, event, principal, expected reason or None for a permit)
_CASES: list[tuple[str, HookPoint, Any, Principal, str | None]] = [
    ("tool permitted", HookPoint.TOOL_BEFORE, _call(refund_input(100)), DANA, None),
    (
        "tool: no permit for the role",
        HookPoint.TOOL_BEFORE,
        _call(refund_input(10)),
        ERIN,
        "Cedar policy refused the call of tool 'refund' for User::\"erin\": no policy permits it",
    ),
    (
        "tool: no permit above the limit",
        HookPoint.TOOL_BEFORE,
        _call(refund_input(100.5)),
        DANA,
        "Cedar policy refused the call of tool 'refund' for User::\"dana\": no policy permits it",
    ),
    (
        "tool: forbid overrides permit",
        HookPoint.TOOL_BEFORE,
        _call(refund_input(10, country="XX")),
        DANA,
        "Cedar policy refused the call of tool 'refund' for User::\"dana\": forbidden by "
        "'no-sanctioned-countries' (<policy_text>:6:1)",
    ),
    (
        "tool: forbid on a principal attribute",
        HookPoint.TOOL_BEFORE,
        _call(refund_input(10)),
        CARL,
        "Cedar policy refused the call of tool 'refund' for User::\"carl\": forbidden by "
        "'contractors-read-only' (<policy_text>:25:1)",
    ),
    (
        "tool: the forbid spares lookups",
        HookPoint.TOOL_BEFORE,
        _call({"order_id": "o"}, "lookup"),
        CARL,
        None,
    ),
    ("model permitted", HookPoint.ROUTE_SELECT, _route("small"), ERIN, None),
    (
        "model: no permit",
        HookPoint.ROUTE_SELECT,
        _route("large"),
        ERIN,
        "Cedar policy refused model 'large' for User::\"erin\": no policy permits it",
    ),
    ("input permitted", HookPoint.INPUT_RECEIVED, _input("where is my order?"), ERIN, None),
    (
        "input: no permit for a long one",
        HookPoint.INPUT_RECEIVED,
        _input("x" * 201),
        ERIN,
        'Cedar policy refused the input for User::"erin": no policy permits it',
    ),
    (
        "input: forbid overrides permit",
        HookPoint.INPUT_RECEIVED,
        _input("my password is hunter2"),
        ERIN,
        "Cedar policy refused the input for User::\"erin\": forbidden by 'no-secrets' "
        "(<policy_text>:21:1)",
    ),
]


@pytest.mark.parametrize(
    ("hook", "event", "principal", "reason"),
    [case[1:] for case in _CASES],
    ids=[case[0] for case in _CASES],
)
async def test_each_hook_permits_refuses_and_forbids(
    hook: HookPoint, event: Any, principal: Principal, reason: str | None
) -> None:
    handler = built()
    called = env(hook, principal)
    outcome = await handler(event, called)
    if reason is None:
        assert outcome is None
        assert called.notes
        assert "permitted by" in called.notes[0]
    else:
        assert outcome == Block(reason)


async def test_the_principal_is_the_one_the_env_carries_not_one_in_the_input() -> None:
    handler = built()
    # A model cannot name a principal: the input is data under context.input only.
    forged = {**refund_input(10), "principal": "dana", "roles": ["finance"]}
    outcome = await handler(_call(forged), env(HookPoint.TOOL_BEFORE, ERIN))
    assert isinstance(outcome, Block)
    assert 'User::"erin"' in outcome.reason


async def test_a_run_without_a_principal_is_refused_unless_the_agent_may_act() -> None:
    refused = await built()(_route("small"), env(HookPoint.ROUTE_SELECT, None))
    assert refused == Block("Cedar policy refused route.select: the run has no principal")
    # With anonymous="agent" the agent is the principal, and policies decide for it.
    agent_handler = built(
        anonymous="agent",
        policy_text='permit(principal == Agent::"desk", action, resource);',
    )
    assert await agent_handler(_route("small"), env(HookPoint.ROUTE_SELECT, None)) is None
    other = built(
        anonymous="agent",
        policy_text='permit(principal == Agent::"kiosk", action, resource);',
    )
    assert isinstance(await other(_route("small"), env(HookPoint.ROUTE_SELECT, None)), Block)


async def test_a_tool_the_schema_lacks_and_input_that_does_not_fit_are_refused() -> None:
    handler = built()
    unknown = await handler(_call({}, "delete_everything"), env(HookPoint.TOOL_BEFORE, DANA))
    assert unknown == Block(
        "Cedar policy refused the call of tool 'delete_everything': it is not in the Cedar "
        "schema, so no policy can permit it"
    )
    for bad, where in [
        ({**refund_input(), "amount": "a lot"}, "input.amount should be a number, got str"),
        ({"amount": 5}, "input.order is required and missing"),
        (refund_input(0.00001), "a Cedar decimal holds four digits after the point"),
        ("refund everything", "input should be an object, got str"),
    ]:
        outcome = await handler(_call(bad), env(HookPoint.TOOL_BEFORE, DANA))
        assert isinstance(outcome, Block)
        assert outcome.reason.startswith(
            "Cedar policy refused the call of tool 'refund': its input does not fit"
        )
        assert where in outcome.reason


async def test_guide_tells_the_model_at_tool_before_and_blocks_elsewhere() -> None:
    handler = built(on_deny="guide")
    guided = await handler(_call(refund_input(500)), env(HookPoint.TOOL_BEFORE, DANA))
    assert guided == Guide(
        "Cedar policy refused the call of tool 'refund' for User::\"dana\": no policy "
        "permits it. Do not call it again this way."
    )
    # Guide is not an outcome route.select allows: there the refusal blocks.
    blocked = await handler(_route("large"), env(HookPoint.ROUTE_SELECT, DANA))
    assert isinstance(blocked, Block)


async def test_attributes_the_schema_does_not_declare_are_a_middleware_error() -> None:
    handler = built()
    stranger = Principal("zoe", frozenset(), {"clearance": "top"})
    with pytest.raises(ValueError, match=r"attributes \['clearance'\] are not declared"):
        await handler(_route("small"), env(HookPoint.ROUTE_SELECT, stranger))
    wrong_type = Principal("zoe", frozenset(), {"employment": 3})
    with pytest.raises(ValueError, match=r"principal\.employment should be a string, got int"):
        await handler(_route("small"), env(HookPoint.ROUTE_SELECT, wrong_type))


async def test_a_policy_that_fails_to_evaluate_never_leaves_an_allow() -> None:
    # Cedar skips a policy whose evaluation errors (here a 64-bit overflow). Were the
    # skipped one a forbid, the permits alone would allow: that is no decision, and the
    # fail mode (closed: blocked) decides. A Deny despite the error stands.
    overflowing = "context.run.attempt * 4611686018427387904 < 0"
    erring_forbid = built(
        policy_text=(
            'permit(principal, action == Action::"route.select", resource);\n'
            f'@id("overflows") forbid(principal, action, resource) when {{ {overflowing} }};'
        )
    )
    assert await erring_forbid(_route("small"), env(HookPoint.ROUTE_SELECT, DANA)) is None
    with pytest.raises(CedarEvaluationError, match="overflow"):
        await erring_forbid(_route("small"), env(HookPoint.ROUTE_SELECT, DANA, attempt=2))
    erring_permit = built(
        policy_text=(
            'permit(principal, action == Action::"route.select", resource) '
            f"when {{ {overflowing} }};"
        )
    )
    refused = await erring_permit(_route("small"), env(HookPoint.ROUTE_SELECT, DANA, attempt=2))
    assert isinstance(refused, Block)


async def test_the_run_is_in_the_context() -> None:
    handler = built(
        policy_text=(
            'permit(principal, action == Action::"route.select", resource) when '
            '{ context.run.agent == "desk" && context.run.attempt == 1 && '
            'context.run has session && context.run.session == "session-1" };'
        )
    )
    assert await handler(_route("small"), env(HookPoint.ROUTE_SELECT, DANA)) is None
    second = await handler(_route("small"), env(HookPoint.ROUTE_SELECT, DANA, attempt=2))
    assert isinstance(second, Block)


def test_settings_need_policies_and_forbid_unknown_keys() -> None:
    with pytest.raises(ValueError, match="give Cedar policies"):
        CedarSettings()
    with pytest.raises(ValueError, match="on_deny"):
        CedarSettings.model_validate({"policy_text": "", "on_deny": "warn"})
    with pytest.raises(ValueError, match="polices"):
        CedarSettings.model_validate({"polices": ["a.cedar"]})


async def test_names_that_look_like_cedar_are_only_names() -> None:
    handler = built(
        policy_text=(
            'permit(principal == User::"dana", action in Action::"tool.before", resource);\n'
            'permit(principal, action == Action::"route.select", resource == Model::"small");'
        )
    )
    # Ids go to Cedar as {type, id} data, never spliced into policy or request text.
    forged = Principal('dana", action, resource); permit(principal')
    outcome = await handler(_call({"order_id": "o"}, "lookup"), env(HookPoint.TOOL_BEFORE, forged))
    assert isinstance(outcome, Block)
    sneaky_tool = await handler(
        _call({}, 'lookup"); permit(principal, action, resource'), env(HookPoint.TOOL_BEFORE, DANA)
    )
    assert isinstance(sneaky_tool, Block)
    assert "is not in the Cedar schema" in sneaky_tool.reason
    sneaky_model = _route('small" || true')
    assert isinstance(await handler(sneaky_model, env(HookPoint.ROUTE_SELECT, DANA)), Block)
    assert await handler(_route("small"), env(HookPoint.ROUTE_SELECT, DANA)) is None


async def test_the_agent_as_principal_is_also_the_input_resource() -> None:
    handler = built(
        anonymous="agent",
        policy_text='permit(principal == Agent::"desk", action, resource == Agent::"desk");',
    )
    assert await handler(_input("hello"), env(HookPoint.INPUT_RECEIVED, None)) is None
