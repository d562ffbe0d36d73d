"""CallLimits: tool calls per run, in all and per tool, on a real Agent.

The tools count their runs, so "N ran" is observed on the tools; the results the model
read are in the history. Concurrent calls of one turn are real anyio tasks: the tools
wait on one another, so every call of the turn is in flight at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from stageware import (
    Agent,
    AgentTool,
    ScriptedModel,
    SQLiteSessionStore,
    StopReason,
    StructuredOutputError,
    ToolContext,
    tool,
)
from stageware.middleware import CallLimits, require_approval
from stageware.policy import PolicyEngine, SignedCredentials
from tests.host.agent_helpers import calls


class Tools:
    """``search`` and ``fetch``, counting their runs; ``search`` waits for its peers."""

    def __init__(self, *, together: int = 0) -> None:
        self.ran: list[str] = []
        self._arrived = 0
        self._all_in: anyio.Event | None = None
        self._together = together

        @tool
        async def search(query: str) -> str:
            """Search."""
            self.ran.append(f"search:{query}")
            if self._together:
                # Every call of the turn is in flight before any finishes.
                if self._all_in is None:
                    self._all_in = anyio.Event()
                self._arrived += 1
                if self._arrived == self._together:
                    self._all_in.set()
                with anyio.fail_after(5):
                    await self._all_in.wait()
            return f"found {query}"

        @tool
        def fetch(url: str) -> str:
            """Fetch a page."""
            self.ran.append(f"fetch:{url}")
            return "page"

        self.all: list[AgentTool] = [search, fetch]


def searches(count: int, start: int = 0) -> Any:
    return calls(*(("search", {"query": f"q{n}"}, f"s{n}") for n in range(start, start + count)))


def results(agent: Agent) -> list[tuple[str, str]]:
    """Every tool result in the history: (status, text)."""
    return [
        (block["toolResult"]["status"], block["toolResult"]["content"][0].get("text", ""))
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]


def agent_with(tools: Tools, script: list[Any], limits: CallLimits) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    agent = Agent(model, tools=tools.all)
    limits.install(agent)
    return agent, model


@pytest.mark.anyio
async def test_the_limit_is_hit_exactly_at_n_per_tool() -> None:
    tools = Tools()
    script = [
        searches(1, 0),
        searches(1, 1),
        calls(("fetch", {"url": "u"}, "f0")),
        searches(1, 2),
        "Done.",
    ]
    agent, model = agent_with(tools, script, CallLimits(per_tool={"search": 2}))

    result = await agent.invoke_async("research")

    assert result.stop_reason == "end_turn"
    # Two searches ran, fetch has no limit, the third search was answered with an error.
    assert tools.ran == [
        "search:q0",
        "search:q1",
        "fetch:u",
    ]
    assert results(agent)[-1] == (
        "error",
        "Error: the tool call limit is reached: search may be called 2 times per run",
    )
    assert len(model.requests) == 5


@pytest.mark.anyio
async def test_the_total_limit_counts_every_tool() -> None:
    tools = Tools()
    script = [
        searches(1),
        calls(("fetch", {"url": "u"}, "f0")),
        calls(("fetch", {"url": "v"}, "f1")),
        "Done.",
    ]
    agent, _ = agent_with(tools, script, CallLimits(max_tool_calls=2))

    await agent.invoke_async("research")

    assert tools.ran == ["search:q0", "fetch:u"]
    assert results(agent)[-1] == (
        "error",
        "Error: the tool call limit is reached: this run may make 2 tool call(s) in all",
    )


@pytest.mark.anyio
async def test_concurrent_calls_of_one_turn_are_counted_exactly() -> None:
    tools = Tools(together=3)
    agent, _ = agent_with(tools, [searches(5), "Done."], CallLimits(per_tool={"search": 3}))

    await agent.invoke_async("research")

    assert len(tools.ran) == 3
    statuses = [status for status, _ in results(agent)]
    assert sorted(statuses) == ["error", "error", "success", "success", "success"]


@pytest.mark.anyio
async def test_a_second_run_starts_from_zero_even_with_the_same_invocation_state() -> None:
    tools = Tools()
    script = [searches(2, 0), "First.", searches(2, 2), "Second."]
    agent, _ = agent_with(tools, script, CallLimits(max_tool_calls=2))
    shared: dict[str, Any] = {}

    await agent.invoke_async("one", invocation_state=shared)
    await agent.invoke_async("two", invocation_state=shared)

    assert sorted(tools.ran) == ["search:q0", "search:q1", "search:q2", "search:q3"]
    assert all(status == "success" for status, _ in results(agent))


@pytest.mark.anyio
async def test_two_agents_with_one_limits_object_count_apart() -> None:
    limits = CallLimits(max_tool_calls=1)
    first_tools, second_tools = Tools(), Tools()
    first, _ = agent_with(first_tools, [searches(1), "Done."], limits)
    second, _ = agent_with(second_tools, [searches(1), "Done."], limits)

    await first.invoke_async("a")
    await second.invoke_async("b")

    assert (first_tools.ran, second_tools.ran) == (["search:q0"], ["search:q0"])


@pytest.mark.anyio
async def test_stop_ends_the_run_before_the_model_is_called_again() -> None:
    tools = Tools()
    script = [searches(1, 0), searches(2, 1), "never: the run stopped"]
    agent, model = agent_with(tools, script, CallLimits(per_tool={"search": 2}, on_limit="stop"))

    result = await agent.invoke_async("research")

    stop: StopReason = result.stop_reason
    assert stop == "limit_tool_calls"
    # One of the second turn's two calls ran (they run concurrently: either may be first).
    assert (tools.ran[0], len(tools.ran)) == ("search:q0", 2)
    # The call over the limit has its error result: the history stays valid.
    assert sorted(status for status, _ in results(agent)) == ["error", "success", "success"]
    assert result.text == (
        "Stopped: the tool call limit is reached: search may be called 2 times per run."
    )
    # The model never said that: the message is the result's, not the history's, which
    # ends on the tool results.
    assert agent.messages[-1]["role"] == "user"
    assert "toolResult" in agent.messages[-1]["content"][0]
    assert len(model.requests) == 2
    # The next run starts afresh, and the model is called again.
    again = await agent.invoke_async("go on")
    assert (again.stop_reason, again.text) == ("end_turn", "never: the run stopped")


@pytest.mark.anyio
async def test_a_call_a_policy_suspended_is_not_counted_and_the_resume_runs_it() -> None:
    tools = Tools()
    credentials = SignedCredentials(b"call limits tests: a secret nowhere else")
    policy = PolicyEngine([require_approval(tools=["fetch"])], authenticator=credentials)
    script = [calls(("fetch", {"url": "u"}, "f0")), searches(1), "Done."]
    model = ScriptedModel(script)
    agent = Agent(model, tools=tools.all, policy=policy)
    CallLimits(max_tool_calls=1).install(agent)

    first = await agent.invoke_async("fetch u")
    assert (first.stop_reason, tools.ran) == ("interrupt", [])
    approval = {"approved": True, "credential": credentials.issue("ana", ttl=60)}
    resume = [{"interruptResponse": {"interruptId": first.interrupts[0].id, "response": approval}}]
    second = await agent.invoke_async(resume)

    # The suspended fetch was not counted: the resume made the one call the run may make
    # (the approved fetch); the search after it was over the limit.
    assert (second.stop_reason, tools.ran) == ("end_turn", ["fetch:u"])
    assert results(agent)[-1][0] == "error"


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({}, ValueError, "give max_tool_calls, per_tool or both"),
        ({"max_tool_calls": 0}, ValueError, "max_tool_calls must be at least 1, got 0"),
        ({"max_tool_calls": True}, TypeError, "max_tool_calls must be an int, got True"),
        ({"per_tool": {"search": 2.5}}, TypeError, r"per_tool\['search'\] must be an int"),
        ({"per_tool": {"": 1}}, ValueError, "per_tool has the key '', not a tool name"),
        ({"max_tool_calls": 1, "on_limit": "halt"}, ValueError, "'error' or 'stop', got 'halt'"),
    ],
)
def test_bad_limits_are_refused_with_what_is_wrong(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        CallLimits(**options)


@pytest.mark.anyio
async def test_a_structured_run_stopped_by_a_limit_ends_without_output() -> None:
    class Answer(BaseModel):
        summary: str

    tools = Tools()
    script = [searches(1, 0), searches(1, 1), '{"summary": "never asked for"}']
    agent, model = agent_with(tools, script, CallLimits(max_tool_calls=1, on_limit="stop"))

    result = await agent.invoke_async("research", output_type=Answer)

    # Not asked again for the output: the limit is not something a retry corrects.
    assert (result.stop_reason, result.structured_output) == ("limit_tool_calls", None)
    assert len(model.requests) == 2
    with pytest.raises(StructuredOutputError, match="stop_reason 'limit_tool_calls'"):
        _ = result.output


@tool
def ask(question: str, context: ToolContext) -> str:
    """Ask the user."""
    return str(context.interrupt("ask", reason=question))


def answer(result: Any, response: str) -> list[Any]:
    return [{"interruptResponse": {"interruptId": result.interrupts[0].id, "response": response}}]


@pytest.mark.anyio
async def test_a_resume_goes_on_with_the_interrupted_runs_counters_and_stop() -> None:
    tools = Tools()
    script = [
        searches(1, 0),
        calls(("ask", {"question": "?"}, "a0"), ("search", {"query": "q1"}, "s1")),
        searches(1, 2),
        "never: the run stopped",
    ]
    model = ScriptedModel(script)
    agent = Agent(model, tools=[*tools.all, ask])
    CallLimits(per_tool={"search": 1}, on_limit="stop").install(agent)

    first = await agent.invoke_async("research")
    assert (first.stop_reason, tools.ran) == ("interrupt", ["search:q0"])
    second = await agent.invoke_async(answer(first, "yes"))

    # The resume is the same run: its one search is spent, and the stop the interrupted
    # pass reached holds; an interrupt does not buy a second search.
    assert (second.stop_reason, tools.ran) == ("limit_tool_calls", ["search:q0"])
    assert len(model.requests) == 2
    assert [status for status, _ in results(agent)] == ["success", "success", "error"]


@pytest.mark.anyio
async def test_the_counters_wait_in_the_agent_state_only_while_a_run_is_interrupted() -> None:
    tools = Tools()
    script = [
        calls(("search", {"query": "q0"}, "s0"), ("ask", {"question": "?"}, "a0")),
        searches(1, 1),
        "Done.",
        searches(1, 2),
        "Done again.",
    ]
    agent = Agent(ScriptedModel(script), tools=[*tools.all, ask])
    CallLimits(max_tool_calls=2).install(agent)

    first = await agent.invoke_async("research")
    [(key, counts)] = agent.state.to_dict().items()
    assert key.startswith("stageware.middleware.CallLimits:")
    assert counts == {"total": 1, "per_tool": {"search": 1}, "stopped": None}
    second = await agent.invoke_async(answer(first, "yes"))
    # search, ask and the last search over the limit of 2 in all.
    assert (second.stop_reason, tools.ran) == ("end_turn", ["search:q0"])
    assert results(agent)[-1] == (
        "error",
        "Error: the tool call limit is reached: this run may make 2 tool call(s) in all",
    )
    assert agent.state.to_dict() == {}
    # The run is over: the next one starts from zero.
    third = await agent.invoke_async("more")
    assert (third.stop_reason, tools.ran) == ("end_turn", ["search:q0", "search:q2"])


@pytest.mark.anyio
async def test_a_resume_in_another_process_finds_the_counters_in_the_session(
    tmp_path: Path,
) -> None:
    database = tmp_path / "sessions.db"
    tools = Tools()
    script = [calls(("search", {"query": "q0"}, "s0"), ("ask", {"question": "?"}, "a0"))]
    store = SQLiteSessionStore(database)
    first_agent = Agent(
        ScriptedModel(script), tools=[*tools.all, ask], session_store=store, session_id="s"
    )
    CallLimits(per_tool={"search": 1}).install(first_agent)
    first = await first_agent.invoke_async("research")
    store.close()

    # Another process builds the agent and the same limits again, and resumes.
    reopened = SQLiteSessionStore(database)
    try:
        second_agent = Agent(
            ScriptedModel([searches(1, 1), "Done."]),
            tools=[*tools.all, ask],
            session_store=reopened,
            session_id="s",
        )
        CallLimits(per_tool={"search": 1}).install(second_agent)
        second = await second_agent.invoke_async(answer(first, "yes"))
    finally:
        reopened.close()

    assert (second.stop_reason, tools.ran) == ("end_turn", ["search:q0"])
    assert results(second_agent)[-1][0] == "error"
