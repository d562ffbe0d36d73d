"""Throttled model calls are retried by the agent: backoff, caps, Retry-After, hooks, cancel.

``ScriptedModel`` raises a scripted ``ModelThrottledError`` as any custom model would; the
end-to-end case with ``OpenAIModel`` and a 429 is at the bottom.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator

import openai
import pytest

from stageware import (
    AfterModelCallEvent,
    Agent,
    BeforeModelCallEvent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ModelError,
    ModelRetryStrategy,
    ModelThrottledError,
    ScriptedModel,
)
from stageware.openai import OpenAIModel

from .fake_openai_server import ErrorReply, FakeOpenAIServer, SSEReply, chunk

pytestmark = pytest.mark.anyio

# No waiting in tests that are not about the wait.
FAST = ModelRetryStrategy(initial_delay=0.0, jitter=0.0)


def throttled(retry_after: float | None = None) -> ModelThrottledError:
    return ModelThrottledError("slow down", retry_after=retry_after)


# --- the policy ----------------------------------------------------------------------------


def test_the_defaults_follow_strands() -> None:
    strategy = ModelRetryStrategy()

    assert (strategy.max_attempts, strategy.initial_delay, strategy.max_delay) == (6, 4.0, 240.0)
    assert strategy.jitter == 0.25


def test_backoff_doubles_up_to_the_cap() -> None:
    strategy = ModelRetryStrategy(initial_delay=4.0, max_delay=100.0, jitter=0.0)

    assert [strategy.backoff(retry) for retry in range(1, 8)] == [4, 8, 16, 32, 64, 100, 100]
    assert strategy.backoff(5000) == 100  # no overflow on a long run of retries


def test_jitter_only_shortens_the_wait_and_by_at_most_its_fraction() -> None:
    strategy = ModelRetryStrategy(initial_delay=8.0, jitter=0.5)

    waits = {strategy.backoff(1) for _ in range(200)}

    assert all(4.0 <= wait <= 8.0 for wait in waits)
    assert len(waits) > 100  # spread out, not one fixed value


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ModelRetryStrategy(max_attempts=0), "max_attempts must be at least 1"),
        (lambda: ModelRetryStrategy(initial_delay=-1.0), "delays must not be negative"),
        (lambda: ModelRetryStrategy(max_delay=-1.0), "delays must not be negative"),
        (lambda: ModelRetryStrategy(jitter=1.5), "jitter must be between 0 and 1"),
    ],
)
def test_a_nonsensical_strategy_is_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# --- the agent retries, and hooks and middleware see every attempt ------------------------


async def test_a_throttled_call_is_retried_and_each_attempt_has_its_hooks() -> None:
    model = ScriptedModel([throttled(), throttled(), "Hello"])
    agent = Agent(model, retry_strategy=FAST)
    seen: list[tuple[str, int, str | None]] = []
    agent.add_hook(lambda event: seen.append(("before", event.attempt, None)), BeforeModelCallEvent)
    agent.add_hook(
        lambda event: seen.append(
            ("after", event.attempt, type(event.exception).__name__ if event.exception else None)
        ),
        AfterModelCallEvent,
    )
    chain_runs: list[int] = []

    async def count(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        chain_runs.append(1)
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, count)

    result = await agent.invoke_async("Hi")

    assert result.text == "Hello"
    assert seen == [
        ("before", 1, None),
        ("after", 1, "ModelThrottledError"),
        ("before", 2, None),
        ("after", 2, "ModelThrottledError"),
        ("before", 3, None),
        ("after", 3, None),
    ]
    assert len(chain_runs) == 3  # retries wrap the chain: middleware sees every attempt
    assert result.metrics.model_calls == 3
    assert [message["role"] for message in agent.messages] == ["user", "assistant"]


async def test_the_agent_gives_up_after_max_attempts_and_says_so() -> None:
    model = ScriptedModel([throttled(), throttled(), throttled(), "never reached"])
    agent = Agent(model, retry_strategy=ModelRetryStrategy(max_attempts=3, initial_delay=0.0))

    with pytest.raises(ModelThrottledError) as caught:
        await agent.invoke_async("Hi")

    assert len(model.requests) == 3
    assert caught.value.__notes__ == [
        "The model call was throttled on 3 attempts; ModelRetryStrategy.max_attempts is 3."
    ]


async def test_without_a_retry_strategy_throttling_is_raised_at_once() -> None:
    model = ScriptedModel([throttled(), "never reached"])
    agent = Agent(model, retry_strategy=None)

    with pytest.raises(ModelThrottledError):
        await agent.invoke_async("Hi")

    assert len(model.requests) == 1


async def test_other_model_errors_are_not_retried() -> None:
    model = ScriptedModel([ModelError("bad request"), "never reached"])
    agent = Agent(model, retry_strategy=FAST)

    with pytest.raises(ModelError, match="bad request"):
        await agent.invoke_async("Hi")

    assert len(model.requests) == 1


async def test_retry_after_is_waited_out_exactly() -> None:
    model = ScriptedModel([throttled(retry_after=0.3), "Hello"])
    # A backoff alone would not wait at all.
    agent = Agent(model, retry_strategy=FAST)

    started = time.monotonic()
    result = await agent.invoke_async("Hi")

    assert result.text == "Hello"
    assert time.monotonic() - started >= 0.3


async def test_a_retry_after_longer_than_max_delay_is_raised_not_waited_out() -> None:
    model = ScriptedModel([throttled(retry_after=3600), "never reached"])
    agent = Agent(model, retry_strategy=ModelRetryStrategy(max_delay=60))

    started = time.monotonic()
    with pytest.raises(ModelThrottledError) as caught:
        await agent.invoke_async("Hi")

    assert time.monotonic() - started < 5
    assert len(model.requests) == 1
    assert "asked to wait 3600 s" in caught.value.__notes__[0]


async def test_a_hook_that_retries_itself_gets_no_extra_wait() -> None:
    model = ScriptedModel([throttled(), "Hello"])
    # The policy's wait would be a minute; the hook's retry does not add it.
    agent = Agent(model, retry_strategy=ModelRetryStrategy(initial_delay=60.0))

    def retry_now(event: AfterModelCallEvent) -> None:
        if isinstance(event.exception, ModelThrottledError):
            event.retry = True

    agent.add_hook(retry_now, AfterModelCallEvent)

    started = time.monotonic()
    result = await agent.invoke_async("Hi")

    assert result.text == "Hello"
    assert time.monotonic() - started < 5


async def test_middleware_that_handles_throttling_itself_goes_first() -> None:
    model = ScriptedModel([throttled(), "never reached"])
    fallback = ScriptedModel(["From the fallback"])
    agent = Agent(model, retry_strategy=FAST)

    async def fall_back(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        try:
            async for event in next_fn(ctx):
                yield event
        except ModelThrottledError:
            async for event in next_fn(ctx.replace(model=fallback)):
                yield event

    agent.add_middleware(InvokeModelStage.Wrap, fall_back)

    result = await agent.invoke_async("Hi")

    assert result.text == "From the fallback"
    assert len(model.requests) == 1


async def test_a_cancel_ends_the_backoff_wait() -> None:
    model = ScriptedModel([throttled(), "never reached"])
    agent = Agent(model, retry_strategy=ModelRetryStrategy(initial_delay=60.0, jitter=0.0))
    timers: list[threading.Timer] = []

    def cancel_soon(event: AfterModelCallEvent) -> None:
        # From another thread, while the agent waits to retry.
        timer = threading.Timer(0.2, agent.cancel)
        timer.start()
        timers.append(timer)

    agent.add_hook(cancel_soon, AfterModelCallEvent)

    started = time.monotonic()
    result = await agent.invoke_async("Hi")

    assert result.stop_reason == "cancelled"
    assert time.monotonic() - started < 5
    assert len(model.requests) == 1
    assert [message["role"] for message in agent.messages] == ["user"]
    for timer in timers:
        timer.join()


# --- end to end: a 429 from an OpenAI-compatible server ------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


async def test_a_429_with_retry_after_is_retried_by_the_agent(server: FakeOpenAIServer) -> None:
    server.reply(
        ErrorReply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "0.2"}),
        SSEReply([chunk({"content": "Hello"}), chunk({}, "stop")]),
    )
    attempts: list[int] = []
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=30.0
    ) as client:
        agent = Agent(OpenAIModel("test-model", client=client), retry_strategy=FAST)
        agent.add_hook(lambda event: attempts.append(event.attempt), BeforeModelCallEvent)

        started = time.monotonic()
        result = await agent.invoke_async("Hi")

    assert result.text == "Hello"
    assert attempts == [1, 2]
    assert len(server.requests) == 2
    assert time.monotonic() - started >= 0.2


@pytest.mark.parametrize("hint", [float("nan"), float("inf"), -1.0])
async def test_a_hint_no_clock_can_wait_out_is_ignored_with_a_warning(
    hint: float, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel([throttled(retry_after=hint), "Hello"])
    agent = Agent(model, retry_strategy=FAST)

    result = await agent.invoke_async("Hi")

    assert result.text == "Hello"
    assert len(model.requests) == 2
    assert "ignoring the retry_after" in caplog.text
