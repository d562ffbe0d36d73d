"""A request too long for the model's context window ends the run, cleanly, once.

``ContextWindowOverflowError`` that escapes the model call (no middleware reduced the
request, no hook retried) ends the pass with ``stop_reason="context_window_overflow"``:
the error on ``result.error``, the history valid and unchanged, so the next prompt works
once the request fits. It is never retried by the retry strategy, and a hook that
retries for ever is stopped by the model-call limit.
"""

from __future__ import annotations

import pydantic
import pytest

from stageware import (
    AfterModelCallEvent,
    Agent,
    ContextWindowOverflowError,
    EventLoopStopEvent,
    MemorySessionStore,
    ModelRetryStrategy,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    StructuredOutputError,
    tool,
)
from tests.host.agent_helpers import collect
from tests.host.converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio

LONG = "word " * 200  # about 250 tokens


@tool
def fetch_report() -> str:
    """Fetch the quarterly report."""
    return "report line\n" * 200


async def test_an_overflow_ends_the_run_with_its_stop_reason_and_the_history_valid() -> None:
    model = ScriptedModel(["Fits now."], context_window=100)
    agent = Agent(model)

    result = await agent.invoke_async(LONG)

    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)
    assert "over the context window of 100" in str(result.error)
    assert (result.message["role"], result.message["content"]) == ("assistant", [])
    assert agent.messages == [{"role": "user", "content": [{"text": LONG}]}]
    assert_valid_converse(agent.messages)
    assert model.remaining == 1

    model.context_window = 1_000
    again = await agent.invoke_async("Shorter, please.")

    assert (again.stop_reason, again.text, again.error) == ("end_turn", "Fits now.", None)
    assert_valid_converse(agent.messages, for_request=False)
    assert [message["role"] for message in agent.messages] == ["user", "assistant"]


async def test_the_next_prompt_works_once_the_user_trims_the_history() -> None:
    model = ScriptedModel(["Long answer. " * 20, "Short answer."], context_window=120)
    agent = Agent(model)
    await agent.invoke_async(LONG[:300])

    overflowed = await agent.invoke_async(LONG[:200])
    assert overflowed.stop_reason == "context_window_overflow"
    assert_valid_converse(agent.messages)  # ends on the unanswered user turn

    del agent.messages[:2]
    result = await agent.invoke_async("And now?")

    assert result.text == "Short answer."
    assert_valid_converse(agent.messages, for_request=False)


async def test_an_overflow_after_a_tool_round_leaves_no_call_unanswered() -> None:
    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("fetch_report", {})]), "Summary."],
        context_window=300,
    )
    agent = Agent(model, tools=[fetch_report])

    result = await agent.invoke_async("Summarise the report")

    assert result.stop_reason == "context_window_overflow"
    assert [message["role"] for message in agent.messages] == ["user", "assistant", "user"]
    assert_valid_converse(agent.messages)
    assert result.metrics.tool_calls == 1


async def test_the_stream_ends_with_the_overflow_stop() -> None:
    agent = Agent(ScriptedModel([], context_window=10))

    events, result = await collect(agent, LONG)

    stops = [event for event in events if isinstance(event, EventLoopStopEvent)]
    assert [stop.stop_reason for stop in stops] == ["context_window_overflow"]
    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)


def test_the_sync_call_returns_the_overflow_stop() -> None:
    result = Agent(ScriptedModel([], context_window=10))(LONG)

    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)


async def test_the_retry_strategy_never_retries_an_overflow() -> None:
    overflow = ContextWindowOverflowError("too long", model_id="small")
    model = ScriptedModel([overflow, "never asked"])
    agent = Agent(model, retry_strategy=ModelRetryStrategy(initial_delay=0, max_attempts=5))

    result = await agent.invoke_async("Hi")

    assert result.stop_reason == "context_window_overflow"
    assert result.error is overflow
    assert (len(model.requests), result.metrics.model_calls) == (1, 1)


async def test_a_hook_sees_the_overflow_first_and_may_trim_and_retry() -> None:
    model = ScriptedModel(["Old answer.", "Fits after trimming."], context_window=80)
    agent = Agent(model)
    await agent.invoke_async("An old question " * 10)
    seen: list[Exception | None] = []

    def trim_and_retry(event: AfterModelCallEvent) -> None:
        seen.append(event.exception)
        if isinstance(event.exception, ContextWindowOverflowError):
            del agent.messages[:-1]  # keep the new prompt only
            event.retry = True

    agent.add_hook(trim_and_retry, AfterModelCallEvent)
    result = await agent.invoke_async("A new question " * 10)

    assert result.text == "Fits after trimming."
    assert isinstance(seen[0], ContextWindowOverflowError)
    assert seen[1] is None
    assert_valid_converse(agent.messages, for_request=False)


async def test_a_hook_that_always_retries_is_stopped_by_the_model_call_limit() -> None:
    agent = Agent(ScriptedModel([], context_window=10), max_model_calls=3)

    def retry(event: AfterModelCallEvent) -> None:
        event.retry = event.exception is not None

    agent.add_hook(retry, AfterModelCallEvent)
    result = await agent.invoke_async(LONG)

    assert result.stop_reason == "limit_model_calls"
    assert result.metrics.model_calls == 3


async def test_a_session_stores_the_ending_and_the_next_worker_goes_on() -> None:
    store = MemorySessionStore()
    model = ScriptedModel(["Answered."], context_window=100)
    first = Agent(model, session_store=store, session_id="chat")

    result = await first.invoke_async(LONG)
    assert result.stop_reason == "context_window_overflow"

    model.context_window = 1_000
    second = Agent(model, session_store=store, session_id="chat")
    assert second.messages == [{"role": "user", "content": [{"text": LONG}]}]
    answered = await second.invoke_async("Go on.")

    assert answered.text == "Answered."
    assert_valid_converse(second.messages, for_request=False)


class Verdict(pydantic.BaseModel):
    """A verdict."""

    guilty: bool


async def test_a_structured_run_names_the_stop_when_its_output_is_read() -> None:
    agent = Agent(ScriptedModel([], context_window=10))

    result = await agent.invoke_async(LONG, output_type=Verdict)

    assert result.stop_reason == "context_window_overflow"
    with pytest.raises(StructuredOutputError, match="context_window_overflow"):
        _ = result.output
