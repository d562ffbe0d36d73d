"""After every way an invocation can end, the next model request is one a provider accepts.

Each case ends a first invocation one way (a failed model call, raising middleware of a
stage and phase, a raising hook, a cancellation, a short-circuit, the model-call limit,
a consumer that stops reading) and then calls the agent again. The messages the model
receives on that call must alternate user and assistant turns and answer every
``toolUse`` in the next turn. The history's own repair rule is tested at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from stageware import (
    AfterModelCallEvent,
    AfterToolCallEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamResult,
    AgentStreamStage,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    EventLoopStopEvent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    Message,
    MessageAddedEvent,
    ModelMessageEvent,
    ModelStopReason,
    Prompt,
    ScriptedModel,
    ScriptedTurn,
    ToolContext,
    ToolResultMessageEvent,
    tool,
)

from .agent_helpers import answer, calls, texts, tool_results
from .converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio


@tool
async def work() -> str:
    """Finish at once."""
    return "worked"


@tool
async def confirm(context: ToolContext) -> str:
    """Ask a human first."""
    return f"confirmed {context.interrupt('confirm')}"


@tool
async def slow() -> str:
    """Take longer than anyone waits."""
    await anyio.sleep(60)
    return "late"


TOOL_TURN = calls(("work", {}, "t1"))


class Failure(Exception):
    """What the failing parts of these cases raise."""


def once() -> Callable[[], bool]:
    """A flag that is true the first time it is asked, then false."""
    asked: list[bool] = []

    def first() -> bool:
        if asked:
            return False
        asked.append(True)
        return True

    return first


Ending = Callable[[], Awaitable[tuple[Agent, ScriptedModel]]]
ENDINGS: dict[str, Ending] = {}


def ending(name: str) -> Callable[[Ending], Ending]:
    def register(case: Ending) -> Ending:
        ENDINGS[name] = case
        return case

    return register


def agent_with(*script: ScriptedTurn | str | BaseException) -> tuple[Agent, ScriptedModel]:
    """An agent on *script*, whose turn for the next call ("ok") the caller appends."""
    model = ScriptedModel([*script, "ok"])
    return Agent(model, tools=[work, confirm, slow]), model


async def fails(agent: Agent, prompt: Prompt = "start") -> None:
    with pytest.raises(Exception) as raised:  # noqa: PT011 - each case raises its own
        await agent.invoke_async(prompt)
    assert isinstance(raised.value, Failure | RuntimeError)


# -- failed model calls ------------------------------------------------------------------


@ending("the model call fails")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(Failure("provider 500"))
    await fails(agent)
    return agent, model


@ending("the model call fails after a tool round")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN, Failure("provider 500"))
    await fails(agent)
    return agent, model


@ending("the model stream fails mid-answer")
async def _() -> tuple[Agent, ScriptedModel]:
    broken = ScriptedTurn(text="a partial answer", error=Failure("reset"), error_after_chunks=3)
    agent, model = agent_with(broken)
    await fails(agent)
    return agent, model


# -- raising InvokeModel middleware ----------------------------------------------------------


@ending("InvokeModel Input middleware raises")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with()
    first = once()

    def refuse(ctx: InvokeModelContext) -> InvokeModelContext:
        if first():
            raise Failure("input")
        return ctx

    agent.add_middleware(InvokeModelStage.Input, refuse)
    await fails(agent)
    return agent, model


@ending("InvokeModel Wrap middleware raises mid-stream")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with("streamed, then dropped")
    first = once()

    async def break_off(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        breaking = first()
        async for event in next_fn(ctx):
            yield event
            if breaking:
                raise Failure("wrap")

    agent.add_middleware(InvokeModelStage.Wrap, break_off)
    await fails(agent)
    return agent, model


@ending("InvokeModel Output middleware raises on a tool call")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN)
    first = once()

    def refuse(result: InvokeModelResult) -> InvokeModelResult:
        if first():
            raise Failure("output")
        return result

    agent.add_middleware(InvokeModelStage.Output, refuse)
    await fails(agent)
    return agent, model


@ending("InvokeModel Wrap middleware short-circuits without a result")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with()
    first = once()

    async def swallow(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        if first():
            return
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, swallow)
    await fails(agent)
    return agent, model


@ending("InvokeModel Wrap middleware short-circuits with its own tool call")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with("after the cached turn")
    first = once()
    cached: Message = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": "c1", "name": "work", "input": {}}}],
    }

    async def from_cache(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        if first():
            yield ModelStopReason(
                stop_reason="tool_use",
                message=cached,
                usage={"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                metrics={"latencyMs": 0},
            )
            return
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, from_cache)
    result = await agent.invoke_async("start")
    assert result.text == "after the cached turn"
    return agent, model


# -- raising or short-circuiting AgentStream middleware ---------------------------------------


@ending("AgentStream Input middleware raises")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with()
    first = once()

    def refuse(ctx: AgentStreamContext) -> AgentStreamContext:
        if first():
            raise Failure("input")
        return ctx

    agent.add_middleware(AgentStreamStage.Input, refuse)
    await fails(agent)
    return agent, model


def raise_after(kind: type[object]) -> Callable[..., AsyncIterator[AgentStreamEvent]]:
    first = once()

    async def break_off(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        breaking = first()
        async for event in next_fn(ctx):
            yield event
            if breaking and isinstance(event, kind):
                raise Failure(f"after {kind.__name__}")

    return break_off


@ending("AgentStream Wrap middleware raises after the model's tool call")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN)
    agent.add_middleware(AgentStreamStage.Wrap, raise_after(ModelMessageEvent))
    await fails(agent)
    return agent, model


@ending("AgentStream Wrap middleware raises after the tool results")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN)
    agent.add_middleware(AgentStreamStage.Wrap, raise_after(ToolResultMessageEvent))
    await fails(agent)
    return agent, model


@ending("AgentStream Output middleware raises")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN, "answered")
    first = once()

    def refuse(result: AgentStreamResult) -> AgentStreamResult:
        if first():
            raise Failure("output")
        return result

    agent.add_middleware(AgentStreamStage.Output, refuse)
    await fails(agent)
    return agent, model


@ending("AgentStream Wrap middleware short-circuits")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with()
    first = once()

    async def answer_itself(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if first():
            yield EventLoopStopEvent(
                stop_reason="end_turn",
                message={"role": "assistant", "content": [{"text": "from a cache"}]},
                metrics={"latencyMs": 0},
                request_state={},
            )
            return
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(AgentStreamStage.Wrap, answer_itself)
    assert (await agent.invoke_async("start")).text == "from a cache"
    return agent, model


# -- raising hooks ---------------------------------------------------------------------------


def raising_hook(
    event_type: type[Any], *script: ScriptedTurn | str, when: Callable[[Any], bool] | None = None
) -> Ending:
    async def case() -> tuple[Agent, ScriptedModel]:
        agent, model = agent_with(*script)
        first = once()

        def fail(event: Any) -> None:
            if (when is None or when(event)) and first():
                raise Failure(event_type.__name__)

        agent.add_hook(fail, event_type)
        await fails(agent)
        return agent, model

    return case


def is_tool_call(event: MessageAddedEvent) -> bool:
    return any("toolUse" in block for block in event.message["content"])


def is_tool_reply(event: MessageAddedEvent) -> bool:
    return bool(tool_results(event.message))


ENDINGS["a BeforeInvocationEvent hook raises"] = raising_hook(BeforeInvocationEvent)
ENDINGS["a BeforeModelCallEvent hook raises"] = raising_hook(BeforeModelCallEvent)
ENDINGS["an AfterModelCallEvent hook raises"] = raising_hook(AfterModelCallEvent, TOOL_TURN)
ENDINGS["a MessageAddedEvent hook raises on the tool call"] = raising_hook(
    MessageAddedEvent, TOOL_TURN, when=is_tool_call
)
ENDINGS["a MessageAddedEvent hook raises on the tool results"] = raising_hook(
    MessageAddedEvent, TOOL_TURN, when=is_tool_reply
)
ENDINGS["a BeforeToolCallEvent hook raises"] = raising_hook(BeforeToolCallEvent, TOOL_TURN)
ENDINGS["an AfterToolCallEvent hook raises"] = raising_hook(AfterToolCallEvent, TOOL_TURN)


@ending("a MessageAddedEvent hook raises on a resumed round's results")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(calls(("confirm", {}, "c1")))
    interrupted = await agent.invoke_async("start")
    first = once()

    def fail(event: MessageAddedEvent) -> None:
        if is_tool_reply(event) and first():
            raise Failure("message added")

    agent.add_hook(fail, MessageAddedEvent)
    await fails(agent, answer((interrupted.interrupts[0].id, "yes")))
    return agent, model


# -- cancellations, limits and consumers that stop reading -----------------------------------


@ending("a cancel before the model call")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with()
    first = once()
    agent.add_hook(lambda event: agent.cancel() if first() else None, BeforeInvocationEvent)
    assert (await agent.invoke_async("start")).stop_reason == "cancelled"
    return agent, model


@ending("a cancel mid-stream")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(ScriptedTurn(text="a long answer in many chunks"))
    first = once()

    async def cancel_on_first_event(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        cancelling = first()
        async for event in next_fn(ctx):
            if cancelling:
                agent.cancel()
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, cancel_on_first_event)
    assert (await agent.invoke_async("start")).stop_reason == "cancelled"
    return agent, model


@ending("a cancel from a tool")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(calls(("work", {}, "w1"), ("slow", {}, "s1")))
    agent.add_hook(lambda event: agent.cancel(), AfterToolCallEvent)
    assert (await agent.invoke_async("start")).stop_reason == "cancelled"
    return agent, model


@ending("a cancellation from outside during a tool round")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(calls(("slow", {}, "s1")))
    with anyio.move_on_after(0.2):
        await agent.invoke_async("start")
    return agent, model


@ending("the model-call limit")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN, calls(("work", {}, "t2")))
    agent.max_model_calls = 2
    assert (await agent.invoke_async("start")).stop_reason == "limit_model_calls"
    agent.max_model_calls = 50
    return agent, model


@ending("the consumer stops reading after the model's tool call")
async def _() -> tuple[Agent, ScriptedModel]:
    agent, model = agent_with(TOOL_TURN)
    async with aclosing(agent.stream_async("start")) as events:
        async for event in events:
            if isinstance(event, ModelMessageEvent):
                break
    return agent, model


@pytest.mark.parametrize("name", list(ENDINGS))
async def test_the_next_request_is_valid_after(name: str) -> None:
    agent, model = await ENDINGS[name]()
    assert_valid_converse(agent.messages, for_request=False)
    asked_before = len(model.requests)

    result = await agent.invoke_async("next")

    assert result.stop_reason == "end_turn"
    assert result.text == "ok"
    sent = model.requests[asked_before:]
    for request in sent:
        assert_valid_converse(request.messages)
    assert texts(sent[0].messages[-1])[-1] == "next"
    assert_valid_converse(agent.messages, for_request=False)


# -- the repair rule -------------------------------------------------------------------------


async def test_a_prompt_the_model_never_answered_joins_the_next_one() -> None:
    model = ScriptedModel([Failure("provider 500"), "answered both"])
    agent = Agent(model)
    added: list[Message] = []
    agent.add_hook(lambda event: added.append(event.message), MessageAddedEvent)
    with pytest.raises(Failure):
        await agent.invoke_async("first question")

    await agent.invoke_async("second question")

    joined: Message = {
        "role": "user",
        "content": [{"text": "first question"}, {"text": "second question"}],
    }
    assert model.requests[-1].messages == [joined]
    assert agent.messages[0] == joined
    # The hooks hear the turn as it now stands in the history.
    assert added[1] == joined
    assert len(agent.messages) == 2


async def test_no_prompt_asks_again_on_the_history_as_it_is() -> None:
    model = ScriptedModel([Failure("provider 500"), "answered"])
    agent = Agent(model)
    with pytest.raises(Failure):
        await agent.invoke_async("the question")

    result = await agent.invoke_async()

    assert result.text == "answered"
    assert model.requests[-1].messages == [{"role": "user", "content": [{"text": "the question"}]}]


async def test_tool_results_left_last_lead_the_joined_turn() -> None:
    model = ScriptedModel([TOOL_TURN, Failure("provider 500"), "ok"])
    agent = Agent(model, tools=[work])
    with pytest.raises(Failure):
        await agent.invoke_async("start")

    await agent.invoke_async("next")

    last = model.requests[-1].messages[-1]
    assert [r["toolUseId"] for r in tool_results(last)] == ["t1"]
    assert texts(last) == ["next"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
