"""ModelFallback moves a failed model call on to the next model, and only when it should.

Through a real ``Agent``, with scripted models that fail as adapters do (a
``ModelThrottledError``, a ``ModelError``, a ``ContextWindowOverflowError``) and a model
that breaks after its answer started streaming; and with two ``OpenAIModel``s against
the fake OpenAI-compatible server on loopback, the first answering 429 or 500.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from stageware import (
    Agent,
    AgentResultEvent,
    ContextWindowOverflowError,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ModelError,
    ModelRetryStrategy,
    ModelStreamChunkEvent,
    ModelThrottledError,
    ScriptedModel,
)
from stageware._generated.payloads import Messages, StreamEvent
from stageware.middleware import ModelFallback
from stageware.openai import OpenAIModel
from tests.host.fake_openai_server import ErrorReply, FakeOpenAIServer, SSEReply, chunk

pytestmark = pytest.mark.anyio


def throttled(model_id: str) -> ModelThrottledError:
    return ModelThrottledError(f"model {model_id!r}: HTTP 429", model_id=model_id, status_code=429)


def agent_with(primary: Any, *fallbacks: Any, **options: Any) -> Agent:
    # No retries by the agent: each test sees what the fallback alone does.
    agent = Agent(primary, retry_strategy=None)
    agent.add_middleware(InvokeModelStage, ModelFallback(fallbacks, **options))
    return agent


class BreaksMidStream:
    """A model whose answer starts streaming and then fails, as a reset connection does."""

    model_id = "breaks-mid-stream"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(
        self, messages: Messages, *args: Any, **kwargs: Any
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "Half an ans"}, "contentBlockIndex": 0}}
        raise ModelError("connection reset mid-stream", model_id=self.model_id)


# --- moving on ---------------------------------------------------------------------------


async def test_a_throttled_call_moves_on_to_the_backup(caplog: pytest.LogCaptureFixture) -> None:
    primary = ScriptedModel([throttled("primary")], model_id="primary")
    backup = ScriptedModel(["From the backup."], model_id="backup")
    agent = agent_with(primary, backup)

    result = await agent.invoke_async("Hi")

    assert result.text == "From the backup."
    assert (len(primary.requests), len(backup.requests)) == (1, 1)
    # The backup got the same conversation; the history has one answer, the backup's.
    assert backup.requests[0].messages == primary.requests[0].messages
    assert [message["role"] for message in agent.messages] == ["user", "assistant"]
    assert agent.model is primary  # the call was routed; the agent kept its model
    assert (
        "model call to ScriptedModel('primary') failed (ModelThrottledError: model 'primary': "
        "HTTP 429); falling back to ScriptedModel('backup')"
    ) in caplog.text


async def test_each_fallback_is_tried_in_order_and_the_next_call_starts_at_the_first() -> None:
    first = ScriptedModel([ModelError("down", model_id="first"), "First again."], model_id="first")
    second = ScriptedModel([throttled("second")], model_id="second")
    third = ScriptedModel(["From the third."], model_id="third")
    agent = agent_with(first, second, third)

    answers = [(await agent.invoke_async(prompt)).text for prompt in ("Hi", "Again")]

    assert answers == ["From the third.", "First again."]
    assert [len(m.requests) for m in (first, second, third)] == [2, 1, 1]


async def test_an_inner_handler_sees_each_model_the_call_is_routed_to() -> None:
    primary = ScriptedModel([throttled("primary")], model_id="primary")
    backup = ScriptedModel(["ok"], model_id="backup")
    agent = agent_with(primary, backup)
    seen: list[Any] = []

    async def observe(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(context.model)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage, observe)  # registered second: inside the fallback

    await agent.invoke_async("Hi")

    assert seen == [primary, backup]


# --- when every model fails ----------------------------------------------------------------


async def test_when_all_fail_the_last_error_is_raised_with_the_earlier_ones_noted() -> None:
    first = ScriptedModel([ModelError("first is down", model_id="first")], model_id="first")
    second = ScriptedModel([throttled("second")], model_id="second")
    agent = agent_with(first, second)

    with pytest.raises(ModelThrottledError) as caught:
        await agent.invoke_async("Hi")

    assert caught.value.model_id == "second"
    assert caught.value.__notes__ == [
        "ModelFallback: ScriptedModel('first') failed before it: ModelError: first is down"
    ]
    assert [message["role"] for message in agent.messages] == ["user"]


async def test_the_agent_retries_a_throttled_last_error_from_the_first_model() -> None:
    first = ScriptedModel([throttled("first"), "First, on the retry."], model_id="first")
    second = ScriptedModel([throttled("second")], model_id="second")
    agent = Agent(first, retry_strategy=ModelRetryStrategy(initial_delay=0.01, jitter=0))
    agent.add_middleware(InvokeModelStage, ModelFallback([second]))

    result = await agent.invoke_async("Hi")

    assert result.text == "First, on the retry."
    assert (len(first.requests), len(second.requests)) == (2, 1)
    assert result.metrics.model_calls == 2


# --- what does not move on -----------------------------------------------------------------


async def test_a_context_window_overflow_does_not_move_on_by_default() -> None:
    overflow = ContextWindowOverflowError("too long", model_id="small")
    small = ScriptedModel([overflow], model_id="small")
    large = ScriptedModel(["unused"], model_id="large")
    agent = agent_with(small, large)

    result = await agent.invoke_async("Hi")

    assert result.stop_reason == "context_window_overflow"
    assert result.error is overflow
    assert large.requests == []


async def test_unless_empty_moves_an_overflow_on_to_a_larger_window() -> None:
    overflow = ContextWindowOverflowError("too long", model_id="small")
    small = ScriptedModel([overflow], model_id="small")
    large = ScriptedModel(["Read it all."], model_id="large")
    agent = agent_with(small, large, unless=())

    assert (await agent.invoke_async("Hi")).text == "Read it all."


async def test_on_narrows_the_failures_that_move_on() -> None:
    primary = ScriptedModel([ModelError("bad request", status_code=400)], model_id="primary")
    backup = ScriptedModel(["unused"], model_id="backup")
    agent = agent_with(primary, backup, on=(ModelThrottledError,))

    with pytest.raises(ModelError, match="bad request") as caught:
        await agent.invoke_async("Hi")

    assert getattr(caught.value, "__notes__", []) == []
    assert backup.requests == []


async def test_an_error_that_is_no_model_error_passes_through() -> None:
    primary = ScriptedModel([RuntimeError("a bug in a custom model")], model_id="primary")
    backup = ScriptedModel(["unused"], model_id="backup")
    agent = agent_with(primary, backup)

    with pytest.raises(RuntimeError, match="a bug in a custom model"):
        await agent.invoke_async("Hi")

    assert backup.requests == []


# --- an answer that already started streaming ----------------------------------------------


async def test_a_failure_after_the_answer_started_streaming_does_not_move_on() -> None:
    flaky = BreaksMidStream()
    backup = ScriptedModel(["unused"], model_id="backup")
    agent = agent_with(flaky, backup)
    chunks: list[StreamEvent] = []

    async def read() -> None:
        async for event in agent.stream_async("Hi"):
            if isinstance(event, ModelStreamChunkEvent):
                chunks.append(event.chunk)

    with pytest.raises(ModelError, match="connection reset mid-stream") as caught:
        await read()

    assert len(chunks) == 2  # the caller saw the start of the first answer, and no other
    assert caught.value.__notes__ == [
        "ModelFallback: not moved on to another model: BreaksMidStream('breaks-mid-stream') "
        "had already streamed 2 event(s) of its answer (buffer=True moves on at any point)"
    ]
    assert backup.requests == []


async def test_a_failure_that_would_not_move_on_gets_no_note_about_streaming() -> None:
    class BugMidStream:
        model_id = "bug"

        async def stream(
            self, messages: Messages, *args: Any, **kwargs: Any
        ) -> AsyncIterator[StreamEvent]:
            yield {"messageStart": {"role": "assistant"}}
            raise RuntimeError("a bug in a custom model")

    agent = agent_with(BugMidStream(), ScriptedModel(["unused"], model_id="backup"))

    with pytest.raises(RuntimeError, match="a bug in a custom model") as caught:
        await agent.invoke_async("Hi")

    assert getattr(caught.value, "__notes__", []) == []


async def test_buffer_moves_on_at_any_point_and_streams_only_the_answer_kept() -> None:
    flaky = BreaksMidStream()
    backup = ScriptedModel(["The whole answer."], model_id="backup")
    agent = agent_with(flaky, backup, buffer=True)
    texts: list[str] = []

    async for event in agent.stream_async("Hi"):
        if isinstance(event, ModelStreamChunkEvent):
            delta = event.chunk.get("contentBlockDelta")
            if delta is not None:
                texts.append(delta["delta"].get("text", ""))

    assert flaky.calls == 1
    assert "".join(texts) == "The whole answer."
    assert agent.messages[-1]["content"] == [{"text": "The whole answer."}]


# --- building one ------------------------------------------------------------------------------


def test_bad_arguments_are_refused_when_it_is_built() -> None:
    backup = ScriptedModel([], model_id="backup")
    with pytest.raises(ValueError, match="at least one model to fall back to"):
        ModelFallback([])
    with pytest.raises(TypeError, match=r"fallbacks\[1\] is 'gpt-4o', not a Model"):
        ModelFallback([backup, "gpt-4o"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="on must be a tuple of exception types"):
        ModelFallback([backup], on=ModelError)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unless holds 'ModelError', not an exception type"):
        ModelFallback([backup], unless=("ModelError",))  # type: ignore[arg-type]


def test_its_repr_names_the_fallbacks() -> None:
    fallback = ModelFallback([ScriptedModel([], model_id="b"), ScriptedModel([])], buffer=True)

    assert (
        repr(fallback)
        == "ModelFallback([ScriptedModel('b'), ScriptedModel('scripted')], buffer=True)"
    )
    assert len(fallback.fallbacks) == 2


# --- two OpenAI-compatible endpoints ----------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    primary, backup = FakeOpenAIServer(), FakeOpenAIServer()
    primary.start()
    backup.start()
    yield primary, backup
    primary.close()
    backup.close()


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(ErrorReply(429, {"error": {"message": "Rate limit reached"}}), id="429"),
        pytest.param(ErrorReply(500, {"error": {"message": "upstream crashed"}}), id="500"),
    ],
)
async def test_an_openai_model_that_fails_moves_on_to_another_endpoint(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], failure: ErrorReply
) -> None:
    primary_server, backup_server = servers
    primary_server.reply(failure)
    backup_server.reply(SSEReply([chunk({"content": "From the backup."}), chunk({}, "stop")]))
    async with (
        openai.AsyncOpenAI(base_url=primary_server.base_url, api_key="k", max_retries=0) as one,
        openai.AsyncOpenAI(base_url=backup_server.base_url, api_key="k", max_retries=0) as two,
    ):
        agent = agent_with(OpenAIModel("primary", client=one), OpenAIModel("backup", client=two))

        result = await agent.invoke_async("Hi")

    assert result.text == "From the backup."
    assert [r.body["model"] for r in primary_server.requests] == ["primary"]
    assert [r.body["model"] for r in backup_server.requests] == ["backup"]
    assert backup_server.requests[0].body["messages"] == primary_server.requests[0].body["messages"]


def test_each_move_is_logged_once_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "stageware.middleware")
    primary = ScriptedModel([throttled("primary")], model_id="primary")
    backup = ScriptedModel(["ok"], model_id="backup")

    agent_with(primary, backup)("Hi")

    (record,) = caplog.records
    assert record.name == "stageware.middleware"
    assert record.levelno == logging.WARNING


async def test_a_cancelled_run_does_not_move_on() -> None:
    # Cancellation is no failure of the model: it passes through the fallback untouched.
    slow = ScriptedModel(
        ["a slow and long answer"], model_id="slow", chunk_size=1, chunk_delay=0.05
    )
    backup = ScriptedModel(["unused"], model_id="backup")
    agent = agent_with(slow, backup)

    stop_reasons: list[str] = []
    async for event in agent.stream_async("Hi"):
        if isinstance(event, ModelStreamChunkEvent) and "contentBlockDelta" in event.chunk:
            agent.cancel()
        elif isinstance(event, AgentResultEvent):
            stop_reasons.append(event.result.stop_reason)

    assert stop_reasons == ["cancelled"]
    assert agent.messages[-1]["role"] == "user"
    assert backup.requests == []
