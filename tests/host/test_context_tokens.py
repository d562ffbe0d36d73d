"""The host fills ``InvokeModelContext.projected_input_tokens`` for the handlers that see it.

A model that counts (``TokenCounter``: ``ScriptedModel``) is asked; any other gets
``estimate_tokens``, scaled by the ratio of the input tokens the last response reported
to the estimate of the request that was sent. The count follows the history however it
changes (grown, repaired, replaced, edited in place), and nobody is asked to count
where no Input or Wrap handler can read it.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    Agent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    InvokeModelWrapHandler,
    Messages,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    StreamEvent,
    SystemContentBlock,
    TokenCounter,
    ToolSpec,
    Usage,
    estimate_tokens,
    tool,
)

pytestmark = pytest.mark.anyio


@tool
def lookup(order_id: int) -> str:
    """Look up an order.

    Args:
        order_id: The order number.
    """
    return f"order {order_id}: shipped"


class Uncounted:
    """A model without ``count_tokens`` (a provider's adapter): the host estimates."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.model_id = inner.model_id

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        return self.inner.stream(messages, tool_specs, system_prompt, **kwargs)


class Counting:
    """A model whose own count is 1,000 more than the estimate, and which logs its counts."""

    def __init__(self, inner: ScriptedModel, *, fails: bool = False) -> None:
        self.inner = inner
        self.fails = fails
        self.counted: list[int] = []

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        return self.inner.stream(messages, tool_specs, system_prompt, **kwargs)

    async def count_tokens(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        system_prompt_content: list[SystemContentBlock] | None = None,
    ) -> int:
        if self.fails:
            raise ConnectionError("the counting endpoint is down")
        count = 1_000 + estimate_tokens(
            messages, system_prompt=system_prompt, tool_specs=tool_specs
        )
        self.counted.append(count)
        return count


def record_projections(agent: Agent) -> list[int]:
    """Record what an Input handler sees in ``projected_input_tokens``, call by call."""
    seen: list[int] = []

    def record(context: InvokeModelContext) -> InvokeModelContext:
        assert context.projected_input_tokens is not None, "the host left it empty"
        seen.append(context.projected_input_tokens)
        return context

    agent.add_middleware(InvokeModelStage.Input, record)
    return seen


def sent_estimate(request: ModelRequest) -> int:
    return estimate_tokens(
        request.messages,
        system_prompt=request.system_prompt_content or request.system_prompt,
        tool_specs=request.tool_specs,
    )


def test_scripted_model_is_a_token_counter() -> None:
    assert isinstance(ScriptedModel([]), TokenCounter)
    assert not isinstance(Uncounted(ScriptedModel([])), TokenCounter)


@pytest.mark.parametrize("counting", [True, False], ids=["count_tokens", "estimate"])
async def test_the_projection_is_the_estimate_of_what_is_sent(counting: bool) -> None:
    # Without tools, ScriptedModel reports exactly the estimate: the calibration stays 1.
    scripted = ScriptedModel(["One.", "Two.", "Three."])
    agent = Agent(scripted if counting else Uncounted(scripted), system_prompt="Be brief.")
    seen = record_projections(agent)

    for prompt in ["Hello there", "And a longer question, with more words in it", "Bye"]:
        await agent.invoke_async(prompt)

    assert seen == [sent_estimate(request) for request in scripted.requests]
    assert seen == sorted(seen)  # the history only grew
    assert scripted.remaining == 0  # counting consumed no script entry


async def test_the_projection_counts_tool_specs_and_tool_rounds() -> None:
    scripted = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"order_id": 7})]),
            "Order 7 has shipped.",
        ]
    )
    agent = Agent(scripted, tools=[lookup], system_prompt=[{"text": "You track orders."}])
    seen = record_projections(agent)

    await agent.invoke_async("Where is order 7?")

    assert seen == [sent_estimate(request) for request in scripted.requests]
    assert scripted.requests[0].tool_specs  # the specs were counted, not absent


async def test_a_wrap_handler_may_pass_its_own_projection_on() -> None:
    scripted = ScriptedModel(["A.", "B."])
    agent = Agent(scripted)

    async def keep_last(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        messages = context.messages[-1:]
        narrowed = context.replace(
            messages=messages, projected_input_tokens=estimate_tokens(messages)
        )
        async for event in next_fn(narrowed):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, keep_last)
    seen = record_projections(agent)  # an Input handler runs before the Wrap: host's value
    after: list[int | None] = []
    agent.add_middleware(InvokeModelStage.Wrap, _recording_wrap(after))

    await agent.invoke_async("First question")
    await agent.invoke_async("Second question")

    # The host's projection is of the whole history, the handler's of what it sends.
    assert seen == [estimate_tokens(agent.messages[:1]), estimate_tokens(agent.messages[:3])]
    assert after == [sent_estimate(request) for request in scripted.requests]
    assert len(scripted.requests[1].messages) == 1


def _recording_wrap(seen: list[int | None]) -> InvokeModelWrapHandler:
    async def record(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(context.projected_input_tokens)
        async for event in next_fn(context):
            yield event

    return record


async def test_usage_at_twice_the_estimate_doubles_the_next_projection() -> None:
    def twice(request: ModelRequest) -> ScriptedTurn:
        tokens = 2 * sent_estimate(request)
        usage: Usage = {"inputTokens": tokens, "outputTokens": 1, "totalTokens": tokens + 1}
        return ScriptedTurn(text="Noted.", usage=usage)

    scripted = ScriptedModel([twice, twice, twice])
    agent = Agent(Uncounted(scripted), system_prompt="Count me.")
    seen = record_projections(agent)

    for prompt in ["one", "two", "three"]:
        await agent.invoke_async(prompt)

    estimates = [sent_estimate(request) for request in scripted.requests]
    assert seen == [estimates[0], 2 * estimates[1], 2 * estimates[2]]


async def test_the_calibration_is_clamped_and_reset_by_another_model() -> None:
    def huge(request: ModelRequest) -> ScriptedTurn:
        return ScriptedTurn(
            text="Sure.",
            usage={"inputTokens": 1_000_000, "outputTokens": 1, "totalTokens": 1_000_001},
        )

    first = ScriptedModel([huge, huge])
    agent = Agent(Uncounted(first))
    seen = record_projections(agent)

    await agent.invoke_async("a question")
    await agent.invoke_async("another")
    agent.model = Uncounted(ScriptedModel(["Fresh."]))
    await agent.invoke_async("and a third")

    assert seen[1] == math.ceil(estimate_tokens(agent.messages[:3]) * 4.0)  # at most 4x
    assert seen[2] == estimate_tokens(agent.messages[:5])  # a new model starts at 1x


async def test_cached_input_counts_toward_the_calibration() -> None:
    def cached(request: ModelRequest) -> ScriptedTurn:
        tokens = sent_estimate(request)
        usage: Usage = {
            "inputTokens": tokens - tokens // 2,
            "cacheReadInputTokens": tokens // 2,
            "outputTokens": 1,
            "totalTokens": tokens + 1,
        }
        return ScriptedTurn(text="Cached.", usage=usage)

    scripted = ScriptedModel([cached, cached])
    agent = Agent(Uncounted(scripted))
    seen = record_projections(agent)

    await agent.invoke_async("a prompt long enough to matter for the count")
    await agent.invoke_async("again")

    assert seen[1] == sent_estimate(scripted.requests[1])  # a ratio of 1, not 1/2


async def test_the_count_follows_a_history_repaired_replaced_or_edited() -> None:
    scripted = ScriptedModel(["One.", "Two.", "Three.", "Four.", "Five."])
    agent = Agent(Uncounted(scripted))
    seen = record_projections(agent)

    await agent.invoke_async("first")
    await agent.invoke_async("second")
    # Edited in place: the same message object, with longer text.
    agent.messages[0]["content"][0]["text"] = "first, and much longer than it was " * 4
    await agent.invoke_async("third")
    # Replaced: a shorter history, not a prefix of the last one.
    agent.messages = [
        {"role": "user", "content": [{"text": "a summary of it all"}]},
        {"role": "assistant", "content": [{"text": "Understood."}]},
    ]
    await agent.invoke_async("fourth")
    # Trimmed at the front, as a manager outside the chain might.
    del agent.messages[:2]
    await agent.invoke_async("fifth")

    assert seen == [sent_estimate(request) for request in scripted.requests]
    assert seen[2] > seen[1] + 20  # the edit counted
    assert seen[3] < seen[2]  # the replacement counted


async def test_a_model_that_counts_is_asked_and_one_that_fails_is_estimated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counting = Counting(ScriptedModel(["Counted."]))
    agent = Agent(counting)
    seen = record_projections(agent)
    await agent.invoke_async("count this")
    assert seen == counting.counted == [1_000 + estimate_tokens(agent.messages[:1])]

    failing = Counting(ScriptedModel(["Estimated."]), fails=True)
    agent = Agent(failing)
    seen = record_projections(agent)
    await agent.invoke_async("count this")
    assert seen == [estimate_tokens(agent.messages[:1])]
    assert "count_tokens of Counting failed" in caplog.text


async def test_nothing_is_counted_where_no_handler_sees_the_context() -> None:
    counting = Counting(ScriptedModel(["Plain.", "Output."]))
    agent = Agent(counting)
    await agent.invoke_async("no handler at all")
    agent.add_middleware(InvokeModelStage.Output, lambda result: result)
    await agent.invoke_async("an Output handler sees only the result")

    assert counting.counted == []
