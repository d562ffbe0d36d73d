"""The InvokeModel stage, end to end: context copies, per-call model, Output authority, retries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from stageware import (
    AfterModelCallEvent,
    Agent,
    BeforeModelCallEvent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    ModelMessageEvent,
    ModelStopReason,
    ModelStopResponse,
    ScriptedModel,
    ScriptedTurn,
    SystemContentBlock,
    ToolChoice,
    tool,
)

from .agent_helpers import ModelStateCounter, calls, collect, texts, usage


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.mark.anyio
async def test_an_input_handler_replacement_reaches_the_model_but_not_the_agent() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model, tools=[ping], system_prompt="Original.")

    def rewrite(ctx: InvokeModelContext) -> InvokeModelContext:
        return ctx.replace(
            system_prompt="Injected.",
            messages=[{"role": "user", "content": [{"text": "rewritten"}]}],
            tool_specs=[],
        )

    agent.add_middleware(InvokeModelStage.Input, rewrite)
    await agent.invoke_async("original question")

    [request] = model.requests
    assert request.system_prompt == "Injected."
    assert request.messages == [{"role": "user", "content": [{"text": "rewritten"}]}]
    assert request.tool_specs == []
    assert agent.system_prompt == "Original."
    assert texts(agent.messages[0]) == ["original question"]


@pytest.mark.anyio
async def test_the_context_collections_are_deep_copies() -> None:
    model = ScriptedModel(["ok"])
    blocks: list[SystemContentBlock] = [{"text": "Rule."}]
    choice: ToolChoice = {"any": {}}
    agent = Agent(model, tools=[ping], system_prompt=blocks, tool_choice=choice)

    def mutate(ctx: InvokeModelContext) -> InvokeModelContext:
        ctx.messages[0]["content"][0]["text"] = "mutated in place"
        ctx.messages.append({"role": "assistant", "content": [{"text": "extra"}]})
        assert isinstance(ctx.system_prompt, list)
        ctx.system_prompt[0]["text"] = "Mutated rule."
        ctx.tool_specs[0]["description"] = "mutated spec"
        cast("dict[str, Any]", ctx.tool_choice)["any"] = {"mutated": True}
        return ctx

    agent.add_middleware(InvokeModelStage.Input, mutate)
    await agent.invoke_async("question")

    # What the handler did travels to the model with its context...
    [request] = model.requests
    assert texts(request.messages[0]) == ["mutated in place"]
    assert request.tool_specs[0]["description"] == "mutated spec"
    # ...but none of it leaks into the agent.
    assert texts(agent.messages[0]) == ["question"]
    assert len(agent.messages) == 2
    assert agent.system_prompt == [{"text": "Rule."}]
    assert ping.tool_spec["description"] != "mutated spec"
    assert choice == {"any": {}}
    assert request.tool_choice == {"any": {"mutated": True}}


@pytest.mark.anyio
async def test_the_agent_tool_choice_reaches_the_model_and_can_be_replaced_per_call() -> None:
    model = ScriptedModel(["a", "b"])
    agent = Agent(model, tools=[ping], tool_choice={"any": {}})
    replaced: list[bool] = []

    def drop_choice(ctx: InvokeModelContext) -> InvokeModelContext:
        if replaced:
            return ctx.replace(tool_choice=None)
        replaced.append(True)
        return ctx

    agent.add_middleware(InvokeModelStage.Input, drop_choice)
    await agent.invoke_async("one")
    await agent.invoke_async("two")

    assert model.requests[0].tool_choice == {"any": {}}
    assert model.requests[1].tool_choice is None


@pytest.mark.anyio
async def test_invocation_state_is_shared_by_reference() -> None:
    state: dict[str, Any] = {"tenant": "acme"}
    seen: list[dict[str, Any]] = []
    model = ScriptedModel(["ok"])
    agent = Agent(model)

    def observe(ctx: InvokeModelContext) -> InvokeModelContext:
        seen.append(ctx.invocation_state)
        ctx.invocation_state["touched"] = True
        return ctx

    agent.add_middleware(InvokeModelStage.Input, observe)
    await agent.invoke_async("hi", invocation_state=state)

    assert seen[0] is state
    assert state["touched"] is True


@pytest.mark.anyio
async def test_a_replaced_model_serves_one_call_without_changing_the_agent() -> None:
    primary = ScriptedModel(["from primary"])
    other = ScriptedModel(["from other"])
    agent = Agent(primary)
    routed: list[bool] = []

    def route(ctx: InvokeModelContext) -> InvokeModelContext:
        if not routed:
            routed.append(True)
            return ctx.replace(model=other)
        return ctx

    agent.add_middleware(InvokeModelStage.Input, route)
    first = await agent.invoke_async("first")
    second = await agent.invoke_async("second")

    assert first.text == "from other"
    assert second.text == "from primary"
    assert agent.model is primary
    assert len(other.requests) == 1
    assert len(primary.requests) == 1


@pytest.mark.anyio
async def test_model_state_is_hidden_from_middleware_and_kept_between_calls() -> None:
    model = ModelStateCounter(ScriptedModel([calls(("ping", {}, "t1")), "done"]))
    agent = Agent(model, tools=[ping])
    contexts: list[InvokeModelContext] = []

    def observe(ctx: InvokeModelContext) -> InvokeModelContext:
        contexts.append(ctx)
        return ctx

    agent.add_middleware(InvokeModelStage.Input, observe)
    await agent.invoke_async("go")

    assert len(contexts) == 2
    assert not hasattr(contexts[0], "model_state")
    # The provider's write in the first call is what the second call starts from.
    assert model.seen == [{}, {"calls": 1}]


@pytest.mark.anyio
async def test_the_output_handler_is_authoritative_over_the_model() -> None:
    """A tool_use turn rewritten to end_turn by Output: no tool runs, the rewrite is history."""
    model = ScriptedModel([calls(("ping", {}, "t1"))])
    agent = Agent(model, tools=[ping])
    replacement = {"role": "assistant", "content": [{"text": "Replaced by Output."}]}
    stop_responses: list[ModelStopResponse | None] = []
    agent.add_hook(lambda e: stop_responses.append(e.stop_response), AfterModelCallEvent)

    def override(result: InvokeModelResult) -> InvokeModelResult:
        original = result.result
        assert original.stop_reason == "tool_use"
        return result.replace(
            result=ModelStopReason(
                stop_reason="end_turn",
                message={"role": "assistant", "content": [{"text": "Replaced by Output."}]},
                usage=usage(7, 7),
                metrics=original.metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, override)
    events, result = await collect(agent, "go")

    assert result.stop_reason == "end_turn"
    assert result.message == replacement
    assert agent.messages[-1] == replacement
    assert len(agent.messages) == 2
    assert [e.message for e in events if isinstance(e, ModelMessageEvent)] == [replacement]
    assert stop_responses == [ModelStopResponse(stop_reason="end_turn", message=replacement)]
    assert result.metrics.usage == usage(7, 7)
    assert result.metrics.tool_calls == 0


@pytest.mark.anyio
async def test_an_output_handler_can_turn_a_text_turn_into_a_tool_call() -> None:
    model = ScriptedModel(["plain text", "after the tool"])
    agent = Agent(model, tools=[ping])
    rewritten: list[bool] = []

    def add_call(result: InvokeModelResult) -> InvokeModelResult:
        if rewritten:
            return result
        rewritten.append(True)
        stop, message, use, metrics = result.result["stop"]
        assert stop == "end_turn"
        return result.replace(
            result=ModelStopReason(
                stop_reason="tool_use",
                message={
                    "role": "assistant",
                    "content": [
                        *message["content"],
                        {"toolUse": {"toolUseId": "out1", "name": "ping", "input": {}}},
                    ],
                },
                usage=use,
                metrics=metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, add_call)
    result = await agent.invoke_async("go")

    assert result.text == "after the tool"
    assert agent.messages[2]["content"][0]["toolResult"]["toolUseId"] == "out1"
    assert agent.messages[2]["content"][0]["toolResult"]["content"] == [{"text": "pong"}]


@pytest.mark.anyio
async def test_a_short_circuit_skips_the_model_but_not_the_hooks() -> None:
    model = ScriptedModel([])
    agent = Agent(model)
    hooks: list[str] = []
    agent.add_hook(lambda e: hooks.append("before"), BeforeModelCallEvent)
    agent.add_hook(lambda e: hooks.append("after"), AfterModelCallEvent)
    cached = {"role": "assistant", "content": [{"text": "from cache"}]}

    async def cache(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        hooks.append("middleware")
        yield ModelStopReason(
            stop_reason="end_turn",
            message={"role": "assistant", "content": [{"text": "from cache"}]},
            usage=usage(0, 0),
            metrics={"latencyMs": 0},
        )

    agent.add_middleware(InvokeModelStage, cache)
    result = await agent.invoke_async("hi")

    assert result.message == cached
    assert agent.messages[-1] == cached
    assert model.requests == []
    assert hooks == ["before", "middleware", "after"]


@pytest.mark.anyio
async def test_a_chain_without_a_stop_reason_is_an_actionable_error() -> None:
    agent = Agent(ScriptedModel(["swallowed"]))

    async def swallow(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(ctx):
            if not isinstance(event, ModelStopReason):
                yield event

    agent.add_middleware(InvokeModelStage.Wrap, swallow)

    with pytest.raises(RuntimeError, match="ModelStopReason"):
        await agent.invoke_async("hi")
    assert len(agent.messages) == 1


@pytest.mark.anyio
async def test_a_middleware_retry_is_one_model_call_for_the_hooks() -> None:
    model = ScriptedModel([ConnectionError("blip"), "second try"])
    agent = Agent(model)
    hooks: list[str] = []
    agent.add_hook(lambda e: hooks.append("before"), BeforeModelCallEvent)
    agent.add_hook(lambda e: hooks.append(f"after:{e.exception!r}"), AfterModelCallEvent)

    async def retry(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        try:
            async for event in next_fn(ctx):
                yield event
        except ConnectionError:
            async for event in next_fn(ctx):
                yield event

    agent.add_middleware(InvokeModelStage, retry)
    result = await agent.invoke_async("hi")

    assert result.text == "second try"
    assert len(model.requests) == 2
    assert hooks == ["before", "after:None"]


@pytest.mark.anyio
async def test_a_hook_retry_reruns_the_whole_chain() -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(text="draft", usage=usage(1, 1)),
            ScriptedTurn(text="final", usage=usage(2, 2)),
        ]
    )
    agent = Agent(model)
    runs: list[str] = []

    async def count(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        runs.append("run")
        async for event in next_fn(ctx):
            yield event

    def retry_drafts(event: AfterModelCallEvent) -> None:
        assert event.stop_response is not None
        if texts(event.stop_response.message) == ["draft"]:
            event.retry = True

    agent.add_middleware(InvokeModelStage, count)
    agent.add_hook(retry_drafts, AfterModelCallEvent)
    result = await agent.invoke_async("hi")

    assert runs == ["run", "run"]
    assert result.text == "final"
    # The discarded call never enters the history.
    assert [texts(m) for m in agent.messages] == [["hi"], ["final"]]
    assert result.metrics.model_calls == 2
    assert result.metrics.usage == usage(2, 2)


@pytest.mark.anyio
async def test_a_hook_can_retry_a_failed_model_call() -> None:
    model = ScriptedModel([TimeoutError("throttled"), "recovered"])
    agent = Agent(model)
    failures: list[Exception] = []

    def retry_on_error(event: AfterModelCallEvent) -> None:
        if event.exception is not None:
            failures.append(event.exception)
            event.retry = True

    agent.add_hook(retry_on_error, AfterModelCallEvent)
    result = await agent.invoke_async("hi")

    assert result.text == "recovered"
    assert [type(e) for e in failures] == [TimeoutError]


def test_the_invoke_model_context_cannot_interrupt() -> None:
    assert not hasattr(InvokeModelContext, "interrupt")


@pytest.mark.anyio
async def test_the_notes_output_handler_example_works_end_to_end() -> None:
    """The notes' example: read ``result.value["stop"]``, return ``result.replace(value=...)``."""
    model = ScriptedModel(["original"])
    agent = Agent(model)

    def output_handler(result: InvokeModelResult) -> InvokeModelResult:
        _, message, use, metrics = result.value["stop"]
        return result.replace(
            value=ModelStopReason(
                stop_reason="stop_sequence", message=message, usage=use, metrics=metrics
            ),
        )

    agent.add_middleware(InvokeModelStage.Output, output_handler)
    result = await agent.invoke_async("hi")

    assert result.stop_reason == "stop_sequence"
    assert result.text == "original"


@pytest.mark.anyio
async def test_the_context_model_starts_as_the_agent_model() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)
    models: list[object] = []

    def observe(ctx: InvokeModelContext) -> InvokeModelContext:
        models.append(ctx.model)
        return ctx

    agent.add_middleware(InvokeModelStage.Input, observe)
    await agent.invoke_async("hi")

    assert models == [model]
    assert models[0] is model
