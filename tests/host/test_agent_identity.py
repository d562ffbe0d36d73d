"""Agent identity: ``Agent(agent_id=...)`` scopes every interrupt id.

The issue's "done when": two sub-agents running one gate under one parent get distinct
interrupt ids, and each approval reaches only its own sub-agent. Tried for the three
kinds of gate a user shares between agents: one AgentStream middleware function, one
ExecuteTool middleware function, and one policy engine whose middleware suspends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    BeforeToolCallEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    MemorySessionStore,
    ScriptedModel,
    ToolContext,
    ToolResultEvent,
    tool,
)
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from tests.host.agent_helpers import (
    agent_stream_interrupt_id,
    all_tool_results,
    answer,
    before_tool_call_interrupt_id,
    calls,
    execute_tool_interrupt_id,
    result_text,
    tool_call_interrupt_id,
)
from tests.policy.approvers import authenticator, credential

pytestmark = pytest.mark.anyio


# -- agent_id: default and validation -------------------------------------------------------


def test_the_default_agent_id_is_derived_from_the_name() -> None:
    model = ScriptedModel(["hi"])
    assert Agent(model).agent_id == "agent"
    assert Agent(model, name="researcher").agent_id == "researcher"
    assert Agent(model, name="My agent: v2").agent_id == "My_agent_v2"
    assert Agent(model, name="???").agent_id == "agent"
    assert Agent(model, name="x", agent_id="billing-7.eu").agent_id == "billing-7.eu"


@pytest.mark.parametrize(
    ("agent_id", "message"),
    [
        ("", "agent_id must not be empty"),
        ("a:b", "agent_id 'a:b' has ':' at position 1"),
        ("team/one", "agent_id 'team/one' has '/' at position 4"),
        ("..", "agent_id '..' is not allowed"),
        ("x" * 129, "has 129 characters; at most 128"),
    ],
)
def test_a_bad_agent_id_is_refused_naming_it(agent_id: str, message: str) -> None:
    with pytest.raises(ValueError, match="agent_id") as raised:
        Agent(ScriptedModel(["hi"]), agent_id=agent_id)
    assert message in str(raised.value)


def test_an_agent_id_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="agent_id must be a str or None, got int"):
        Agent(ScriptedModel(["hi"]), agent_id=7)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_two_sub_agents_with_one_agent_id_under_one_parent_are_refused() -> None:
    one = Agent(ScriptedModel(["a"]), name="one", agent_id="same")
    two = Agent(ScriptedModel(["b"]), name="two", agent_id="same")
    with pytest.raises(
        ValueError, match="sub-agent 'one' and the sub-agent 'two' both have the agent_id 'same'"
    ):
        Agent(ScriptedModel(["p"]), tools=[one.as_tool(name="one"), two.as_tool(name="two")])


def test_a_parent_and_its_sub_agent_with_the_default_agent_id_are_refused() -> None:
    # Both named "agent" by default: one answer would release a step in each.
    sub = Agent(ScriptedModel(["a"]))
    with pytest.raises(ValueError, match="this agent 'agent' and the sub-agent 'agent'"):
        Agent(ScriptedModel(["p"]), tools=[sub.as_tool(name="sub")])


def test_an_agent_id_repeated_at_any_depth_is_refused() -> None:
    leaf = Agent(ScriptedModel(["a"]), name="leaf", agent_id="desk")
    middle = Agent(ScriptedModel(["b"]), name="middle", agent_id="middle", tools=[leaf.as_tool()])
    with pytest.raises(ValueError, match=r"this agent 'top' and the sub-agent 'leaf'.*'desk'"):
        Agent(ScriptedModel(["p"]), name="top", agent_id="desk", tools=[middle.as_tool()])
    cousin = Agent(ScriptedModel(["c"]), name="cousin", agent_id="desk")
    with pytest.raises(ValueError, match="sub-agent 'leaf' and the sub-agent 'cousin'"):
        Agent(ScriptedModel(["p"]), agent_id="top", tools=[middle.as_tool(), cousin.as_tool()])


class _Provider:
    def __init__(self, tools: list[Any]) -> None:
        self._tools = tools

    def current_tools(self) -> list[Any]:
        return self._tools


async def test_a_sub_agent_from_a_provider_with_the_callers_agent_id_is_refused() -> None:
    # A provider's tools are not known when the parent is built: the call is refused.
    sub = Agent(ScriptedModel(["never"]), name="helper", agent_id="desk")
    parent = Agent(
        ScriptedModel([calls(("helper", {"input": "go"}, "p1")), "ok"]),
        agent_id="desk",
        tools=[_Provider([sub.as_tool(name="helper")])],
    )
    done = await parent.invoke_async("go")
    [result] = all_tool_results(parent.messages)
    assert done.stop_reason == "end_turn"
    assert result["status"] == "error"
    assert "agent_id 'desk' of the agent calling it" in result_text(result)
    assert sub.messages == []


# -- every interrupt id is scoped by the agent ------------------------------------------------


async def test_tool_and_hook_interrupt_ids_carry_the_agent_id() -> None:
    @tool
    def confirm(context: ToolContext) -> str:
        """Ask before confirming."""
        return str(context.interrupt("confirm"))

    def hook(event: BeforeToolCallEvent) -> None:
        event.interrupt("danger")

    first = Agent(
        ScriptedModel([calls(("confirm", {}, "call_0")), "ok"]), tools=[confirm], agent_id="a1"
    )
    second = Agent(
        ScriptedModel([calls(("confirm", {}, "call_0")), "ok"]), tools=[confirm], agent_id="a2"
    )
    second.add_hook(hook, BeforeToolCallEvent)

    one = await first.invoke_async("go")
    two = await second.invoke_async("go")

    assert [i.id for i in one.interrupts] == [tool_call_interrupt_id("call_0", "confirm", "a1")]
    assert [i.id for i in two.interrupts] == [
        before_tool_call_interrupt_id("call_0", "danger", "a2")
    ]


# -- two sub-agents sharing one gate under one parent ------------------------------------------

Gate = str  # "agent_stream", "execute_tool" or "policy"

# What each sub-agent's gate received: (agent id, answer).
Seen = list[tuple[str, Any]]


def _stream_gate(seen: Seen) -> Any:
    async def gate(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        decision = ctx.interrupt("publish", reason="publish the draft?")
        seen.append((ctx.agent.agent_id, decision.response))
        async for event in next_fn(ctx):
            yield event

    return gate


def _tool_gate(seen: Seen) -> Any:
    async def gate(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        decision = ctx.interrupt("refund", reason={"tool": ctx.tool_use["name"]})
        seen.append((ctx.agent.agent_id, decision.response))
        if decision.response != "yes":
            yield ToolResultEvent(
                tool_result={
                    "toolUseId": ctx.tool_use["toolUseId"],
                    "status": "error",
                    "content": [{"text": "denied"}],
                }
            )
            return
        async for event in next_fn(ctx):
            yield event

    return gate


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Every refund waits for a person."""
    return Suspend(f"refund of {event.input.get('amount')}")


class Team:
    """A parent whose model calls two sub-agents, alpha and beta, in one turn; both run
    the same gate and their models both name their tool call ``call_0``."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.seen: Seen = []
        self.refunded: list[str] = []
        engine = PolicyEngine([refund_guard], authenticator=authenticator())
        stream_gate, tool_gate = _stream_gate(self.seen), _tool_gate(self.seen)

        def sub(agent_id: str) -> Agent:
            @tool
            def refund(amount: int) -> str:
                """Refund an amount."""
                self.refunded.append(agent_id)
                return f"refunded {amount}"

            script: list[Any] = (
                [f"{agent_id} done"]
                if gate == "agent_stream"
                else [calls(("refund", {"amount": 5}, "call_0")), f"{agent_id} done"]
            )
            agent = Agent(
                ScriptedModel(script),
                tools=[refund],
                name=agent_id,
                policy=engine if gate == "policy" else None,
            )
            if gate == "agent_stream":
                agent.add_middleware(AgentStreamStage, stream_gate)
            elif gate == "execute_tool":
                agent.add_middleware(ExecuteToolStage, tool_gate)
            return agent

        self.alpha, self.beta = sub("alpha"), sub("beta")
        self.parent = Agent(
            ScriptedModel(
                [
                    calls(("alpha", {"input": "a"}, "p1"), ("beta", {"input": "b"}, "p2")),
                    "all done",
                ]
            ),
            tools=[self.alpha.as_tool(), self.beta.as_tool()],
            name="lead",
        )

    def expected_id(self, agent_id: str) -> str | None:
        if self.gate == "agent_stream":
            return agent_stream_interrupt_id("publish", agent_id)
        if self.gate == "execute_tool":
            return execute_tool_interrupt_id("call_0", "refund", agent_id)
        return None  # a policy id carries a fingerprint: checked by its agent's reason

    def yes(self) -> Any:
        return (
            {"approved": True, "credential": credential("ana")} if self.gate == "policy" else "yes"
        )

    def no(self) -> Any:
        return (
            {"approved": False, "credential": credential("ana")} if self.gate == "policy" else "no"
        )


def _ids_by_agent(team: Team, interrupts: list[Any]) -> dict[str, str]:
    """Which sub-agent waits on which of the parent's interrupts."""
    found: dict[str, str] = {}
    for interrupt in interrupts:
        owners = [
            sub.agent_id
            for sub in (team.alpha, team.beta)
            if interrupt.id in {i.id for i in sub.pending_interrupts}
        ]
        assert len(owners) == 1, (interrupt.id, owners)
        found[owners[0]] = interrupt.id
    return found


@pytest.mark.parametrize("gate", ["agent_stream", "execute_tool", "policy"])
async def test_two_sub_agents_sharing_a_gate_get_distinct_ids_and_only_their_own_answer(
    gate: Gate,
) -> None:
    team = Team(gate)

    first = await team.parent.invoke_async("refund both")

    assert first.stop_reason == "interrupt"
    ids = _ids_by_agent(team, first.interrupts)
    assert set(ids) == {"alpha", "beta"}
    assert ids["alpha"] != ids["beta"]
    for agent_id in ("alpha", "beta"):
        expected = team.expected_id(agent_id)
        if expected is not None:
            assert ids[agent_id] == expected
    assert team.refunded == []

    # Alpha's approval: alpha goes on, beta keeps waiting.
    second = await team.parent.invoke_async(answer((ids["alpha"], team.yes())))

    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [ids["beta"]]
    assert [i.id for i in team.beta.pending_interrupts] == [ids["beta"]]
    assert team.alpha.pending_interrupts == []
    if gate == "agent_stream":
        assert team.seen == [("alpha", "yes")]
    else:
        assert team.refunded == ["alpha"]
    if gate == "execute_tool":
        assert team.seen == [("alpha", "yes")]

    # Beta's denial reaches beta alone: its refund never runs.
    third = await team.parent.invoke_async(answer((ids["beta"], team.no())))

    assert third.stop_reason == "end_turn"
    assert third.text == "all done"
    if gate == "agent_stream":
        assert team.seen == [("alpha", "yes"), ("beta", "no")]
    else:
        assert team.refunded == ["alpha"]
    if gate == "execute_tool":
        assert team.seen == [("alpha", "yes"), ("beta", "no")]
    assert team.alpha.pending_interrupts == team.beta.pending_interrupts == []


async def test_one_answer_cannot_be_given_for_the_other_sub_agent() -> None:
    team = Team("execute_tool")
    first = await team.parent.invoke_async("refund both")
    ids = _ids_by_agent(team, first.interrupts)

    # The id an orchestrator would have cross-wired before agent ids: not beta's.
    unscoped = execute_tool_interrupt_id("call_0", "refund", "agent")
    with pytest.raises(KeyError, match="no interrupt with id"):
        await team.parent.invoke_async(answer((unscoped, "yes")))

    assert sorted(i.id for i in team.parent.pending_interrupts) == sorted(ids.values())
    assert team.refunded == []


# -- ids stored by an older version ------------------------------------------------------------


async def test_a_tool_interrupt_stored_under_a_v1_id_is_asked_again_not_approved() -> None:
    """A session written before agent ids held ``v1:tool_call:<toolUseId>:<hash>``: its
    answer releases nothing, and the tool asks again under its v2 id."""
    ran: list[Any] = []

    @tool
    def deploy(context: ToolContext) -> str:
        """Deploy once a human confirms."""
        ran.append(context.interrupt("confirm"))
        return "deployed"

    store = MemorySessionStore()
    first = Agent(
        ScriptedModel([calls(("deploy", {}, "t1"))]),
        tools=[deploy],
        session_store=store,
        session_id="s",
    )
    v2_id = tool_call_interrupt_id("t1", "confirm")
    assert [i.id for i in (await first.invoke_async("ship it")).interrupts] == [v2_id]
    # What the older version stored: the same interrupt under its v1 id.
    stored = store.load("s")
    assert stored is not None
    snapshot = stored.snapshot
    v1_id = "v1:tool_call:t1:" + v2_id.rsplit(":", 1)[1]
    for interrupt in snapshot["interrupt_state"]["interrupts"]:
        interrupt["id"] = v1_id
    store.save("s", snapshot, expected_version=stored.version, owner="old", lease_seconds=None)

    upgraded = Agent(ScriptedModel(["done"]), tools=[deploy], session_store=store, session_id="s")
    assert [i.id for i in upgraded.pending_interrupts] == [v1_id]
    asked_again = await upgraded.invoke_async(answer((v1_id, "yes")))

    assert ran == []
    assert asked_again.stop_reason == "interrupt"
    assert [i.id for i in asked_again.interrupts] == [v2_id]
    done = await upgraded.invoke_async(answer((v2_id, "yes")))
    assert done.stop_reason == "end_turn"
    assert ran == ["yes"]
