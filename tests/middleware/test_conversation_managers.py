"""SlidingWindow and Summarizing through a real Agent: what the model is sent, overflow, summaries.

The models are ``ScriptedModel``s with a ``context_window``: a request over it raises
``ContextWindowOverflowError`` from the stream, as a provider answers, and is recorded in
``model.requests`` all the same, so the tests count every attempt.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    Agent,
    ContextWindowOverflowError,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ModelError,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    estimate_tokens,
    tool,
)
from stageware.middleware import SlidingWindow, Summarizing
from tests.host.converse_history import assert_valid_converse
from tests.middleware.conversation_helpers import as_any, text_of

pytestmark = pytest.mark.anyio

FILLER = "words that take room in the context window. " * 5  # 225 characters, 57 tokens


def prompt(number: int) -> str:
    return f"Question {number}: {FILLER}"


@tool
def lookup(order: int) -> str:
    """Look up an order.

    Args:
        order: The order number.
    """
    return f"Order {order} shipped. {FILLER}"


class Recorder:
    """An outer InvokeModel Wrap handler: what passes through it, error included."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        try:
            async for event in next_fn(context):
                yield event
        except Exception as error:
            self.errors.append(error)
            raise


async def run_to_end(agent: Agent, text: str) -> str | None:
    """Invoke *agent*; the stop reason, or None when the overflow error reached the caller.

    With the host's context handling merged, an overflow that escapes the model call ends
    the run with a stop reason; before, it raises. The managers' contract is the same.
    """
    try:
        result = await agent.invoke_async(text)
    except ContextWindowOverflowError:
        return None
    return result.stop_reason


# --- the sliding window ------------------------------------------------------------------


async def test_the_window_holds_what_fits_and_the_history_keeps_everything() -> None:
    model = ScriptedModel([f"Answer {n}. {FILLER}" for n in range(30)], context_window=600)
    agent = Agent(model, conversation_manager=SlidingWindow(max_tokens=600, max_messages=None))

    for number in range(30):
        await agent.invoke_async(prompt(number))

    assert len(agent.messages) == 60  # the history is whole
    last = model.requests[-1].messages
    assert 1 < len(last) < 60
    assert last == agent.messages[-1 - len(last) : -1]
    assert estimate_tokens(last) <= 540
    for request in model.requests:
        assert_valid_converse(request.messages)


async def test_max_messages_alone_is_strands_window_size() -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(12)])
    agent = Agent(model, conversation_manager=SlidingWindow(max_messages=6, trim_to=1.0))

    for number in range(12):
        await agent.invoke_async(f"Question {number}")

    assert [len(request.messages) for request in model.requests][-3:] == [5, 5, 5]
    assert text_of(model.requests[-1].messages[0]) == "Question 9"


async def test_a_tool_round_is_never_split_from_its_call() -> None:
    def respond(request: ModelRequest) -> ScriptedTurn | str:
        if "toolResult" in request.messages[-1]["content"][0]:
            return f"It shipped. {FILLER}"
        return ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"order": 7})] * 2)

    model = ScriptedModel([respond] * 40, context_window=900)
    agent = Agent(
        model,
        tools=[lookup],
        conversation_manager=SlidingWindow(max_tokens=900, max_messages=None),
    )

    for number in range(20):
        await agent.invoke_async(prompt(number))

    assert len(agent.messages) == 80
    for request in model.requests:
        assert_valid_converse(request.messages)
    assert any(len(request.messages) < 20 for request in model.requests)


async def test_an_over_long_tool_result_is_truncated_to_fit() -> None:
    @tool
    def dump() -> str:
        """Return a very long text."""
        return "x" * 8_000

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("dump")]), "Done."], context_window=1_000
    )
    agent = Agent(model, tools=[dump], conversation_manager=SlidingWindow(max_tokens=1_000))

    result = await agent.invoke_async("Dump it")

    assert result.text == "Done."
    sent = model.requests[-1].messages
    result_text = sent[-1]["content"][0]["toolResult"]["content"][0]["text"]
    assert "[truncated to fit the context window" in result_text
    assert estimate_tokens(sent) <= 900
    # The history keeps the tool's whole result.
    assert agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"] == "x" * 8_000


# --- overflow: reduce and retry once -----------------------------------------------------


async def test_an_overflow_is_retried_once_with_half_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The budget is wrong (twice the model's window): the first call overflows.
    model = ScriptedModel([f"Answer {n}" for n in range(12)], context_window=700)
    agent = Agent(model, conversation_manager=SlidingWindow(max_tokens=1_400, max_messages=None))

    for number in range(12):
        await agent.invoke_async(prompt(number))

    overflowed = [r for r in model.requests if estimate_tokens(r.messages) > 700]
    # One overflow: after it, the manager keeps this agent's requests to the size retried.
    assert len(overflowed) == 1
    assert len(model.requests) == 13
    assert "retrying once with" in caplog.text


async def test_a_request_that_cannot_fit_even_reduced_makes_exactly_two_attempts() -> None:
    model = ScriptedModel(["First answer."], context_window=400)
    recorder = Recorder()
    agent = Agent(model)
    agent.add_middleware(InvokeModelStage, recorder)
    agent.add_middleware(InvokeModelStage, SlidingWindow(max_tokens=10_000, max_messages=None))
    await agent.invoke_async(prompt(0))
    calls_before = len(model.requests)

    # A current turn alone larger than the window: halving drops the earlier turn only.
    stop_reason = await run_to_end(agent, "y" * 2_400)

    assert len(model.requests) - calls_before == 2
    assert len(model.requests[-1].messages) < len(model.requests[-2].messages)
    assert [type(error) for error in recorder.errors] == [ContextWindowOverflowError]
    assert "not retried again" in str(recorder.errors[0].__notes__)
    assert stop_reason in (None, "context_window_overflow")


async def test_a_request_that_cannot_be_made_smaller_is_not_sent_twice() -> None:
    model = ScriptedModel([], context_window=100)
    recorder = Recorder()
    agent = Agent(model)
    agent.add_middleware(InvokeModelStage, recorder)
    agent.add_middleware(
        InvokeModelStage,
        SlidingWindow(max_tokens=10_000, max_messages=None, truncate_tool_results=False),
    )

    await run_to_end(agent, "z" * 1_000)

    assert len(model.requests) == 1
    assert "cannot be made smaller" in str(recorder.errors[0].__notes__)


async def test_an_overflow_after_the_answer_started_is_not_retried() -> None:
    late = ContextWindowOverflowError("too long, said late")
    model = ScriptedModel(
        [ScriptedTurn(text="Partial", error=late, error_after_chunks=2)], context_window=None
    )
    agent = Agent(model, conversation_manager=SlidingWindow(max_tokens=1_000), retry_strategy=None)
    agent.messages.extend(
        [
            {"role": "user", "content": [{"text": "Earlier"}]},
            {"role": "assistant", "content": [{"text": "Reply"}]},
        ]
    )

    stop_reason = await run_to_end(agent, "Now")

    assert len(model.requests) == 1
    assert stop_reason in (None, "context_window_overflow")
    assert "already started" in str(late.__notes__)


# --- summarizing -------------------------------------------------------------------------


def summary_requests(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if r.system_prompt and "condense" in r.system_prompt]


async def test_the_summary_is_made_once_per_stretch_and_sent_first() -> None:
    summarizer = ScriptedModel([f"SUMMARY {n}" for n in range(50)], model_id="summarizer")
    model = ScriptedModel([f"Answer {n}. {FILLER}" for n in range(50)], context_window=1_500)
    agent = Agent(model, conversation_manager=Summarizing(max_tokens=1_500, model=summarizer))

    for number in range(50):
        await agent.invoke_async(prompt(number))

    summaries = len(summarizer.requests)
    # 50 turns of ~120 tokens each in a 1,350-token budget: the first summary when the
    # budget is full (turn 13), then one each time the conversation has grown by the 30%
    # a summary frees (about four turns), not one per call.
    assert 8 <= summaries <= 12, summaries
    assert len(model.requests) == 50  # no summary call went to the agent's model
    last = model.requests[-1].messages
    heading = f"Summary of the earlier conversation:\nSUMMARY {summaries - 1}"
    assert text_of(last[0]).startswith(heading)
    assert_valid_converse(last)
    # Each summary condenses the one before it and the turns after it.
    assert "SUMMARY 0" in text_of(summarizer.requests[1].messages[0])
    assert len(agent.messages) == 100


async def test_the_summary_goes_to_the_agents_own_model_by_default() -> None:
    def respond(request: ModelRequest) -> str:
        if request.system_prompt and "condense" in request.system_prompt:
            return "SUMMARY"
        return f"Answer. {FILLER}"

    model = ScriptedModel([respond] * 40, context_window=1_000)
    seen: list[int] = []

    async def count(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(len(context.messages))
        async for event in next_fn(context):
            yield event

    agent = Agent(model, conversation_manager=Summarizing(max_tokens=1_000))
    agent.add_middleware(InvokeModelStage, count)

    for number in range(15):
        await agent.invoke_async(prompt(number))

    assert summary_requests(model)
    # The agent's middleware saw the 15 calls of the conversation, not the summary calls.
    assert len(seen) == 15
    assert len(model.requests) == 15 + len(summary_requests(model))


async def test_a_failing_summary_falls_back_to_the_sliding_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summarizer = ScriptedModel([ModelError("summarizer down")] * 30, model_id="summarizer")
    model = ScriptedModel([f"Answer {n}. {FILLER}" for n in range(20)], context_window=1_000)
    agent = Agent(model, conversation_manager=Summarizing(max_tokens=1_000, model=summarizer))

    for number in range(20):
        await agent.invoke_async(prompt(number))

    # Asked again only after ten more messages (five turns), not on every call.
    assert 2 <= len(summarizer.requests) <= 3
    assert len(model.requests) == 20
    last = model.requests[-1].messages
    assert last == agent.messages[-1 - len(last) : -1]  # a plain window, no summary
    assert "the summary call failed (ModelError: summarizer down)" in caplog.text


async def test_a_summary_is_not_reused_by_another_agent() -> None:
    summarizer = ScriptedModel([f"SUMMARY {n}" for n in range(40)], model_id="summarizer")
    manager = Summarizing(max_tokens=1_000, model=summarizer)
    first_model = ScriptedModel([f"A {n}. {FILLER}" for n in range(10)])
    first = Agent(first_model, conversation_manager=manager)
    second_model = ScriptedModel([f"B {n}. {FILLER}" for n in range(10)])
    second = Agent(second_model, conversation_manager=manager)

    for number in range(10):
        await first.invoke_async(prompt(number))
    made = len(summarizer.requests)
    for number in range(10):
        await second.invoke_async(f"Other {number}: {FILLER}")

    assert made >= 1
    assert len(summarizer.requests) > made
    for request in second_model.requests:
        assert "A 0." not in str(request.messages)


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"max_tokens": "32k"}, TypeError, "SlidingWindow: max_tokens must be an int or None"),
        ({"max_tokens": 0}, ValueError, "SlidingWindow: max_tokens must be at least 1"),
        ({"max_messages": 0}, ValueError, "SlidingWindow: max_messages must be at least 1"),
        ({"reserve": 1.0}, ValueError, "SlidingWindow: reserve must be in [0, 1)"),
        ({"trim_to": 0}, ValueError, "SlidingWindow: trim_to must be in (0, 1]"),
        ({"truncate_tool_results": "yes"}, TypeError, "truncate_tool_results must be a bool"),
    ],
)
def test_sliding_window_settings_are_checked(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        SlidingWindow(**settings)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"max_tokens": None}, TypeError, "Summarizing: max_tokens must be an int"),
        ({"max_tokens": 100, "summary_ratio": 1.0}, ValueError, "summary_ratio must be in"),
        ({"max_tokens": 100, "model": "gpt-4o"}, TypeError, "model is 'gpt-4o', not a Model"),
        (
            {"max_tokens": 100, "preserve_recent_messages": 0},
            ValueError,
            "Summarizing: preserve_recent_messages must be at least 1",
        ),
    ],
)
def test_summarizing_settings_are_checked(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Summarizing(**settings)


def test_a_conversation_manager_must_be_a_wrap_handler() -> None:
    with pytest.raises(TypeError, match="async generator"):
        Agent(ScriptedModel([]), conversation_manager=as_any(lambda context: context))


async def test_no_conversation_manager_sends_the_whole_history() -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(45)])
    agent = Agent(model)

    for number in range(45):
        await agent.invoke_async(f"Question {number}")

    assert len(model.requests[-1].messages) == 89


async def test_a_count_window_stays_put_until_it_is_full_again() -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(30)])
    agent = Agent(model, conversation_manager=SlidingWindow(max_messages=20))

    for number in range(30):
        await agent.invoke_async(f"Question {number}")

    sizes = [len(request.messages) for request in model.requests]
    # Full at 19 messages, cut to 15 (75% of 20, from a user prompt), then grown again.
    assert sizes[9:16] == [19, 15, 17, 19, 15, 17, 19]
    assert max(sizes) <= 20


async def test_middleware_added_later_sees_the_request_the_model_is_sent() -> None:
    model = ScriptedModel([f"Answer {n}" for n in range(8)])
    seen: list[int] = []

    async def count(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(len(context.messages))
        async for event in next_fn(context):
            yield event

    agent = Agent(model, conversation_manager=SlidingWindow(max_messages=4, trim_to=1.0))
    agent.add_middleware(InvokeModelStage, count)

    for number in range(8):
        await agent.invoke_async(f"Question {number}")

    assert seen == [len(request.messages) for request in model.requests]
    assert max(seen) <= 4
