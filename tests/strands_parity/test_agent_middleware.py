"""Port of Strands 1.62 ``tests/strands/middleware/test_agent_middleware.py`` (InvokeModelStage).

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands runs ``Agent(model=MockedModelProvider([...]), callback_handler=None)``
synchronously; the port runs ``stageware.Agent`` on a ``ScriptedModel`` with
``await agent.invoke_async(...)``, on asyncio and trio. What Strands reads from a model
subclass that captures its arguments (``PromptCapturingModel``, ``AsyncMock(wraps=...)``)
is read from ``ScriptedModel.requests``; ``MockHookProvider`` is a hook on
``LifecycleEvent``; Strands' ``Plugin`` (no stageware counterpart) is a plain object whose
``init_agent`` the test calls; the agent's private ``_model_state`` is read from the
``model_state`` the agent saves in its session (``MemorySessionStore``).

Not ported (they need Strands' private ``agent._model_state``, which stageware keeps out of
reach of middleware and of the agent's public surface; ``test_model_state_not_exposed_on_context``
covers the isolation they protect):

- ``test_middleware_mutation_before_next_does_not_reach_model``: mutates ``agent._model_state``.
- ``test_middleware_mutation_after_next_does_not_persist``: mutates ``agent._model_state``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

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
    MemorySessionStore,
    Message,
    Messages,
    Model,
    ModelStopReason,
    ScriptedModel,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
    tool,
)
from tests.host.agent_helpers import stored_snapshot

from .support import chunk_text, first_text, model_stop, record_lifecycle, text_chunk, tool_turn

pytestmark = pytest.mark.anyio


class ModelStateMutatingModel:
    """A model that applies ``mutate`` to the ``model_state`` the agent hands it on each call."""

    def __init__(self, inner: ScriptedModel, mutate: Callable[[dict[str, Any]], None]) -> None:
        self.inner = inner
        self.mutate = mutate
        self.received_model_state: dict[str, Any] | None = None

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        model_state: dict[str, Any] = kwargs["model_state"]
        self.received_model_state = dict(model_state)
        self.mutate(model_state)
        return self.inner.stream(
            messages,
            tool_specs,
            system_prompt,
            tool_choice=tool_choice,
            system_prompt_content=system_prompt_content,
        )


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(["Hello!"])


@pytest.fixture
def agent(model: ScriptedModel) -> Agent:
    return Agent(model)


async def passthrough(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    async for event in next_fn(context):
        yield event


def capture_into(
    seen: list[InvokeModelContext],
) -> Callable[[InvokeModelContext, InvokeModelNext], AsyncIterator[InvokeModelEvent]]:
    async def capture(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(context)
        async for event in next_fn(context):
            yield event

    return capture


async def cached(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    yield model_stop("Cached")


# --- add_middleware API ---


def test_add_middleware_returns_none(agent: Agent) -> None:
    returned: object = agent.add_middleware(InvokeModelStage, passthrough)
    assert returned is None


async def test_add_middleware_wrap_token_registers_wrap_handler(agent: Agent) -> None:
    seen_contexts: list[InvokeModelContext] = []

    agent.add_middleware(InvokeModelStage.Wrap, capture_into(seen_contexts))
    await agent.invoke_async("test")

    assert len(seen_contexts) == 1
    assert isinstance(seen_contexts[0], InvokeModelContext)


# --- wrap phase ---


async def test_wrap_passthrough_does_not_alter_behavior(agent: Agent) -> None:
    agent.add_middleware(InvokeModelStage, passthrough)
    result = await agent.invoke_async("test")
    assert first_text(result.message) == "Hello!"


async def test_wrap_handler_receives_invoke_model_context(agent: Agent) -> None:
    received_context: list[InvokeModelContext] = []

    agent.add_middleware(InvokeModelStage, capture_into(received_context))
    await agent.invoke_async("test")

    assert len(received_context) == 1
    ctx = received_context[0]
    assert ctx.agent is agent
    assert isinstance(ctx.messages, list)
    assert hasattr(ctx, "system_prompt")
    assert isinstance(ctx.tool_specs, list)
    assert hasattr(ctx, "tool_choice")
    assert isinstance(ctx.invocation_state, dict)


async def test_wrap_context_transformation(agent: Agent) -> None:
    """Middleware can modify the context before it reaches the model."""
    seen: list[InvokeModelContext] = []

    async def inject_prompt(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context.replace(system_prompt="Injected prompt")):
            yield event

    agent.add_middleware(InvokeModelStage, inject_prompt)
    agent.add_middleware(InvokeModelStage, capture_into(seen))
    await agent.invoke_async("test")

    assert seen[0].system_prompt == "Injected prompt"


async def test_wrap_context_transformation_tool_specs(agent: Agent) -> None:
    """Middleware can modify tool_specs and the model receives the modified list."""
    seen: list[InvokeModelContext] = []

    async def modify_specs(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context.replace(tool_specs=[])):
            yield event

    agent.add_middleware(InvokeModelStage, modify_specs)
    agent.add_middleware(InvokeModelStage, capture_into(seen))
    await agent.invoke_async("test")

    assert seen[0].tool_specs == []


async def test_string_system_prompt_reaches_model_as_both_forms() -> None:
    """A string system prompt reaches the model both as a string and as content blocks."""
    model = ScriptedModel(["ok"])
    agent = Agent(model, system_prompt="be concise")
    await agent.invoke_async("test")

    assert model.requests[0].system_prompt == "be concise"
    assert model.requests[0].system_prompt_content == [{"text": "be concise"}]


async def test_system_prompt_blocks_with_cache_point_preserved_through_middleware() -> None:
    """System-prompt content blocks (cachePoint included) survive the middleware round trip."""
    blocks: list[SystemContentBlock] = [{"text": "be concise"}, {"cachePoint": {"type": "default"}}]
    model = ScriptedModel(["ok"])
    agent = Agent(model, system_prompt=blocks)
    seen: list[InvokeModelContext] = []

    agent.add_middleware(InvokeModelStage, capture_into(seen))
    await agent.invoke_async("test")

    # Middleware sees the full content-block form, not the lossy string.
    assert seen[0].system_prompt == blocks
    # The model receives the cachePoint-preserving content blocks.
    assert model.requests[0].system_prompt_content == blocks


async def test_middleware_transformed_system_prompt_reaches_model() -> None:
    """A system_prompt transformed by middleware is what the model receives."""
    model = ScriptedModel(["ok"])
    agent = Agent(model, system_prompt="original")

    async def inject(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context.replace(system_prompt="transformed by middleware")):
            yield event

    agent.add_middleware(InvokeModelStage, inject)
    await agent.invoke_async("test")

    assert model.requests[0].system_prompt == "transformed by middleware"
    assert model.requests[0].system_prompt_content == [{"text": "transformed by middleware"}]


async def test_context_modification_does_not_mutate_agent_state() -> None:
    """Context collections are defensive copies: mutating them does not change the agent."""
    agent = Agent(ScriptedModel(["ok"]), system_prompt="original")

    async def mutating_middleware(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        context.messages.append({"role": "user", "content": [{"text": "injected"}]})
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage, mutating_middleware)
    await agent.invoke_async("test")

    user_texts = [first_text(m) for m in agent.messages if m["role"] == "user"]
    assert "injected" not in user_texts


async def test_wrap_short_circuit_skips_model_call(agent: Agent) -> None:
    """Middleware can short-circuit by not calling next and yielding its own result."""

    async def cached_response(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        yield model_stop("Cached!")

    agent.add_middleware(InvokeModelStage, cached_response)
    result = await agent.invoke_async("test")
    assert first_text(result.message) == "Cached!"


async def test_wrap_yields_nothing_raises_runtime_error(agent: Agent) -> None:
    """A middleware that yields no events produces an actionable RuntimeError."""

    async def silent(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        return
        yield  # pragma: no cover - makes this an async generator

    agent.add_middleware(InvokeModelStage, silent)
    with pytest.raises(
        RuntimeError, match="InvokeModelStage chain finished without yielding a ModelStopReason"
    ):
        await agent.invoke_async("test")


async def test_wrap_trailing_event_after_result_is_not_mistaken_for_the_result(
    agent: Agent,
) -> None:
    """The ModelStopReason is selected by type, so a Wrap handler may yield events after it."""
    seen_trailing: list[InvokeModelEvent] = []
    received: list[ModelStopReason] = []

    async def inject_trailing(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context):
            yield event
        yield text_chunk("done")

    async def observer(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context):
            if chunk_text(event) == "done":
                seen_trailing.append(event)
            yield event

    def output_handler(result: InvokeModelResult) -> InvokeModelResult:
        received.append(result.result)
        return result

    agent.add_middleware(InvokeModelStage, observer)
    agent.add_middleware(InvokeModelStage, inject_trailing)
    agent.add_middleware(InvokeModelStage.Output, output_handler)
    result = await agent.invoke_async("test")

    assert first_text(result.message) == "Hello!"
    assert len(seen_trailing) == 1
    assert isinstance(received[0], ModelStopReason)


async def test_wrap_multiple_middleware_compose_correctly(agent: Agent) -> None:
    order: list[str] = []

    def layer(
        name: str,
    ) -> Callable[[InvokeModelContext, InvokeModelNext], AsyncIterator[InvokeModelEvent]]:
        async def handler(
            context: InvokeModelContext, next_fn: InvokeModelNext
        ) -> AsyncIterator[InvokeModelEvent]:
            order.append(f"{name}_before")
            async for event in next_fn(context):
                yield event
            order.append(f"{name}_after")

        return handler

    agent.add_middleware(InvokeModelStage, layer("outer"))
    agent.add_middleware(InvokeModelStage, layer("inner"))
    await agent.invoke_async("test")

    assert order == ["outer_before", "inner_before", "inner_after", "outer_after"]


async def test_wrap_error_from_model_propagates_through_middleware() -> None:
    """Errors from the model propagate through middleware layers."""
    agent = Agent(ScriptedModel([RuntimeError("model error")]))
    caught: list[RuntimeError] = []

    async def error_catcher(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        try:
            async for event in next_fn(context):
                yield event
        except RuntimeError as error:
            caught.append(error)
            raise

    agent.add_middleware(InvokeModelStage, error_catcher)

    with pytest.raises(RuntimeError, match="model error"):
        await agent.invoke_async("test")

    assert caught


# --- input phase ---


async def test_input_transforms_context(agent: Agent) -> None:
    seen: list[InvokeModelContext] = []

    def inject_prompt(context: InvokeModelContext) -> InvokeModelContext:
        return context.replace(system_prompt="From input handler")

    agent.add_middleware(InvokeModelStage.Input, inject_prompt)
    agent.add_middleware(InvokeModelStage, capture_into(seen))
    await agent.invoke_async("test")

    assert seen[0].system_prompt == "From input handler"


async def test_input_async_handler(agent: Agent) -> None:
    seen: list[InvokeModelContext] = []

    async def async_inject(context: InvokeModelContext) -> InvokeModelContext:
        return context.replace(system_prompt="Async input")

    agent.add_middleware(InvokeModelStage.Input, async_inject)
    agent.add_middleware(InvokeModelStage, capture_into(seen))
    await agent.invoke_async("test")

    assert seen[0].system_prompt == "Async input"


# --- output phase ---


async def test_output_transforms_result(agent: Agent) -> None:
    """An Output handler gets the ModelStopReason in an InvokeModelResult and can replace it."""
    transformed: list[InvokeModelResult] = []

    def output_handler(result: InvokeModelResult) -> InvokeModelResult:
        transformed.append(result)
        event = result.result
        # Strands uses a free-form "custom_stop"; stageware's StopReason is a closed set, so
        # the port rewrites to a stop reason the model did not give.
        return InvokeModelResult(
            result=ModelStopReason(
                stop_reason="stop_sequence",
                message=event.message,
                usage=event.usage,
                metrics=event.metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, output_handler)
    result = await agent.invoke_async("test")

    assert len(transformed) == 1
    assert isinstance(transformed[0], InvokeModelResult)
    assert isinstance(transformed[0].result, ModelStopReason)
    assert result.stop_reason == "stop_sequence"


async def test_output_transformed_message_appended_to_history(agent: Agent) -> None:
    """The message of a transformed Output result is what lands in agent.messages."""

    def output_handler(result: InvokeModelResult) -> InvokeModelResult:
        event = result.result
        rewritten: Message = {"role": "assistant", "content": [{"text": "rewritten by middleware"}]}
        return InvokeModelResult(
            result=ModelStopReason(
                stop_reason=event.stop_reason,
                message=rewritten,
                usage=event.usage,
                metrics=event.metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, output_handler)
    await agent.invoke_async("test")

    assistant_messages = [m for m in agent.messages if m["role"] == "assistant"]
    assert first_text(assistant_messages[-1]) == "rewritten by middleware"


async def test_output_stop_reason_change_prevents_tool_dispatch() -> None:
    """Rewriting stop_reason from tool_use to end_turn in Output prevents the tool call."""
    tool_called: list[bool] = []

    @tool
    def should_not_run() -> str:
        """A tool that must not be dispatched."""
        tool_called.append(True)
        return "ran"

    agent = Agent(ScriptedModel([tool_turn("should_not_run", {}, "t1")]), tools=[should_not_run])

    def force_end_turn(result: InvokeModelResult) -> InvokeModelResult:
        event = result.result
        return InvokeModelResult(
            result=ModelStopReason(
                stop_reason="end_turn",
                message=event.message,
                usage=event.usage,
                metrics=event.metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, force_end_turn)
    result = await agent.invoke_async("test")

    assert result.stop_reason == "end_turn"
    assert not tool_called


# --- model state isolation ---


async def test_model_state_not_exposed_on_context(agent: Agent) -> None:
    """InvokeModelContext has no model_state field (state isolation)."""
    captured: list[InvokeModelContext] = []

    agent.add_middleware(InvokeModelStage, capture_into(captured))
    await agent.invoke_async("test")

    assert len(captured) == 1
    assert not hasattr(captured[0], "model_state")


async def test_model_state_changes_written_back_after_streaming() -> None:
    """What the model writes to model_state while streaming is kept by the agent."""

    def mutate(state: dict[str, Any]) -> None:
        state["responseId"] = "resp_123"

    store = MemorySessionStore()
    agent = Agent(
        ModelStateMutatingModel(ScriptedModel(["Hi"]), mutate), session_store=store, session_id="s"
    )
    await agent.invoke_async("Hello")

    snapshot = stored_snapshot(store, "s")
    assert snapshot["model_state"] == {"responseId": "resp_123"}


async def test_model_state_deletions_synced_back() -> None:
    """Deletions and additions the model makes to model_state are kept by the agent."""
    calls: list[int] = []

    def mutate(state: dict[str, Any]) -> None:
        calls.append(1)
        if len(calls) == 1:
            # Strands seeds agent._model_state by hand; here a first call seeds it.
            state["oldKey"] = "stale"
            return
        state.pop("oldKey", None)
        state["newKey"] = "fresh"

    store = MemorySessionStore()
    model = ModelStateMutatingModel(ScriptedModel(["Hi", "Hi"]), mutate)
    agent = Agent(model, session_store=store, session_id="s")
    await agent.invoke_async("seed")
    await agent.invoke_async("Hello")

    assert model.received_model_state == {"oldKey": "stale"}
    snapshot = stored_snapshot(store, "s")
    assert "oldKey" not in snapshot["model_state"]
    assert snapshot["model_state"]["newKey"] == "fresh"


# --- hooks fire outside middleware ---


async def test_before_model_call_fires_before_middleware(model: ScriptedModel) -> None:
    agent = Agent(model)
    events = record_lifecycle(agent)
    saw_before_hook: list[bool] = []

    async def check_middleware(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        saw_before_hook.append(any(isinstance(e, BeforeModelCallEvent) for e in events))
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage, check_middleware)
    await agent.invoke_async("test")
    assert saw_before_hook == [True]


async def test_after_model_call_fires_after_middleware(model: ScriptedModel) -> None:
    agent = Agent(model)
    events = record_lifecycle(agent)
    middleware_completed: list[bool] = []

    async def tracking_middleware(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context):
            yield event
        middleware_completed.append(True)

    agent.add_middleware(InvokeModelStage, tracking_middleware)
    await agent.invoke_async("test")

    assert middleware_completed
    assert any(isinstance(e, AfterModelCallEvent) for e in events)


# --- plugin middleware ---


async def test_plugin_can_register_middleware(model: ScriptedModel) -> None:
    # stageware has no plugin system: the plugin-shaped object registers a bound method.
    class TimingPlugin:
        name = "timing"

        def __init__(self) -> None:
            self.call_count = 0

        def init_agent(self, agent: Agent) -> None:
            agent.add_middleware(InvokeModelStage, self._middleware)

        async def _middleware(
            self, context: InvokeModelContext, next_fn: InvokeModelNext
        ) -> AsyncIterator[InvokeModelEvent]:
            self.call_count += 1
            async for event in next_fn(context):
                yield event

    plugin = TimingPlugin()
    agent = Agent(model)
    plugin.init_agent(agent)
    await agent.invoke_async("test")

    assert plugin.call_count == 1


# --- no-middleware baselines ---


async def test_no_middleware_agent_works_correctly() -> None:
    agent = Agent(ScriptedModel(["Response"]))
    result = await agent.invoke_async("hello")
    assert first_text(result.message) == "Response"
    assert result.stop_reason == "end_turn"


async def test_no_middleware_agent_with_tools_works_correctly() -> None:
    @tool
    def greet(name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        return f"Hello, {name}!"

    model = ScriptedModel([tool_turn("greet", {"name": "World"}, "t1"), "Greeted!"])
    agent = Agent(model, tools=[greet])
    result = await agent.invoke_async("greet someone")
    assert first_text(result.message) == "Greeted!"


async def test_passthrough_middleware_preserves_result() -> None:
    agent = Agent(ScriptedModel(["Correct"]))
    agent.add_middleware(InvokeModelStage, passthrough)
    result = await agent.invoke_async("test")
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Correct"


# --- additional coverage ---


async def test_short_circuit_model_not_called(model: ScriptedModel) -> None:
    """When middleware short-circuits, the model is never streamed."""
    agent = Agent(model)
    agent.add_middleware(InvokeModelStage, cached)
    await agent.invoke_async("test")
    assert model.requests == []


async def test_hooks_fire_when_middleware_short_circuits(model: ScriptedModel) -> None:
    """BeforeModelCallEvent and AfterModelCallEvent both fire when middleware short-circuits."""
    agent = Agent(model)
    events = record_lifecycle(agent)
    agent.add_middleware(InvokeModelStage, cached)
    await agent.invoke_async("test")

    assert any(isinstance(e, BeforeModelCallEvent) for e in events)
    assert any(isinstance(e, AfterModelCallEvent) for e in events)


async def test_phase_ordering_at_agent_level(model: ScriptedModel) -> None:
    """Input, Wrap and Output run in that order whatever the registration order."""
    order: list[str] = []

    def output_handler(result: InvokeModelResult) -> InvokeModelResult:
        order.append("output")
        return result

    async def wrap_handler(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        order.append("wrap")
        async for event in next_fn(context):
            yield event

    def input_handler(context: InvokeModelContext) -> InvokeModelContext:
        order.append("input")
        return context

    agent = Agent(model)
    agent.add_middleware(InvokeModelStage.Output, output_handler)
    agent.add_middleware(InvokeModelStage, wrap_handler)
    agent.add_middleware(InvokeModelStage.Input, input_handler)

    await agent.invoke_async("test")
    assert order == ["input", "wrap", "output"]


async def test_retry_on_error_use_case() -> None:
    """Middleware can retry model calls on transient errors."""
    model = ScriptedModel(
        [RuntimeError("ThrottlingException"), RuntimeError("ThrottlingException"), "Success!"]
    )
    agent = Agent(model)

    async def retry_middleware(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        for attempt in range(3):
            try:
                async for event in next_fn(context):
                    yield event
                return
            except RuntimeError as error:
                if "ThrottlingException" not in str(error) or attempt == 2:
                    raise

    agent.add_middleware(InvokeModelStage, retry_middleware)
    result = await agent.invoke_async("test")
    assert first_text(result.message) == "Success!"
    assert len(model.requests) == 3


# --- per-call model on context (routing plumbing) ---


async def test_invoke_model_context_exposes_agent_model(agent: Agent) -> None:
    """InvokeModelContext.model starts as agent.model."""
    captured: list[Model] = []

    async def capture(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        captured.append(context.model)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage, capture)
    await agent.invoke_async("test")

    assert captured == [agent.model]


async def test_terminal_streams_context_model_override() -> None:
    """The terminal streams the model set on the context, not agent.model."""
    model_a = ScriptedModel(["A"])
    model_b = ScriptedModel(["B"])
    agent = Agent(model_a)

    def route_to_b(context: InvokeModelContext) -> InvokeModelContext:
        return context.replace(model=model_b)

    agent.add_middleware(InvokeModelStage.Input, route_to_b)
    result = await agent.invoke_async("test")

    assert first_text(result.message) == "B"
    assert model_a.requests == []
