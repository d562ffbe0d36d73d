"""ToolRetry runs a failed tool call again, with backoff, and only when it should.

Through a real ``Agent`` with scripted models and ``@tool`` functions that fail as real
tools do (a ``TimeoutError``, a ``ConnectionError``, a bad argument), on asyncio and trio.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from stageware import (
    Agent,
    AgentResultEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ToolContext,
    ToolResultEvent,
    ToolStreamEvent,
    tool,
)
from stageware.middleware import ToolRetry, ToolRetryAttempt

pytestmark = pytest.mark.anyio

FAST: dict[str, Any] = {"initial_delay": 0.001, "max_delay": 0.001, "jitter": 0}
TOOLS = ["fetch", "refund", "crawl"]


def call(name: str, **tool_input: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, tool_input, id="t1")])


def tool_result_text(model: ScriptedModel) -> str:
    """The text of the tool result the model read on its last request."""
    last = model.requests[-1].messages[-1]
    result = last["content"][0]["toolResult"]
    return f"{result['status']}: {result['content'][0]['text']}"


class Flaky:
    """A tool body that fails with each of *errors* in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "fetched"


def agent_for(body: Flaky, retry: ToolRetry, *, name: str = "fetch") -> tuple[Agent, ScriptedModel]:
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        return body()

    model = ScriptedModel([call(name, url="u"), "Done."])
    agent = Agent(model, tools=[tool(fetch, name=name)])
    agent.add_middleware(ExecuteToolStage, retry)
    return agent, model


async def test_a_transient_failure_is_retried_until_the_tool_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = Flaky(TimeoutError("slow"), ConnectionError("reset"))
    seen: list[ToolRetryAttempt] = []
    agent, model = agent_for(body, ToolRetry(tools=TOOLS, on_retry=seen.append, **FAST))

    with caplog.at_level(logging.INFO, logger="stageware.middleware"):
        result = await agent.invoke_async("Go")

    assert result.text == "Done."
    assert body.calls == 3
    assert tool_result_text(model) == "success: fetched"
    assert [(n.attempt, n.max_attempts, type(n.error)) for n in seen] == [
        (1, 3, TimeoutError),
        (2, 3, ConnectionError),
    ]
    assert seen[0].tool_use["name"] == "fetch"
    assert "tool call t1 ('fetch') failed on attempt 1 of 3 (TimeoutError: slow)" in caplog.text


async def test_after_the_last_attempt_the_model_reads_the_last_error() -> None:
    body = Flaky(TimeoutError("first"), TimeoutError("second"), TimeoutError("third"))
    agent, model = agent_for(body, ToolRetry(tools=TOOLS, max_attempts=2, **FAST))

    result = await agent.invoke_async("Go")

    assert result.text == "Done."
    assert body.calls == 2
    assert tool_result_text(model) == "error: Error: second"


async def test_a_failure_not_worth_retrying_is_not_retried() -> None:
    body = Flaky(ValueError("bad url"))
    agent, model = agent_for(body, ToolRetry(tools=TOOLS, **FAST))

    await agent.invoke_async("Go")

    assert body.calls == 1
    assert tool_result_text(model) == "error: Error: bad url"


async def test_invalid_input_is_not_retried() -> None:
    seen: list[ToolRetryAttempt] = []
    body = Flaky()
    agent, _ = agent_for(body, ToolRetry(tools=TOOLS, on_retry=seen.append, **FAST))
    bad_input = ScriptedModel([call("fetch", url=42), "Done."])
    agent.model = bad_input

    await agent.invoke_async("Go")

    # pydantic's ValidationError is a ValueError: not transient, so one attempt.
    assert (body.calls, seen) == (0, [])
    assert tool_result_text(bad_input).startswith("error: ")


async def test_a_predicate_decides_for_other_errors() -> None:
    body = Flaky(RuntimeError("HTTP 503"), RuntimeError("HTTP 404"))
    retry = ToolRetry(tools=TOOLS, on=(), when=lambda error: "503" in str(error), **FAST)
    agent, model = agent_for(body, retry)

    await agent.invoke_async("Go")

    assert body.calls == 2
    assert tool_result_text(model) == "error: Error: HTTP 404"


async def test_only_the_listed_tools_are_retried() -> None:
    listed = Flaky(TimeoutError("slow"))
    agent, model = agent_for(listed, ToolRetry(tools=["fetch"], **FAST))
    await agent.invoke_async("Go")
    other = Flaky(TimeoutError("slow"))
    agent, model = agent_for(other, ToolRetry(tools=["fetch"], **FAST), name="search")
    await agent.invoke_async("Go")

    assert (listed.calls, other.calls) == (2, 1)
    assert tool_result_text(model) == "error: Error: slow"


async def test_the_waits_back_off_exponentially_up_to_max_delay() -> None:
    body = Flaky(*[TimeoutError("slow")] * 4)
    seen: list[ToolRetryAttempt] = []
    retry = ToolRetry(
        tools=TOOLS,
        max_attempts=5,
        initial_delay=0.01,
        max_delay=0.03,
        jitter=0,
        on_retry=seen.append,
    )
    agent, _ = agent_for(body, retry)

    started = time.monotonic()
    await agent.invoke_async("Go")
    elapsed = time.monotonic() - started

    assert [n.delay for n in seen] == [0.01, 0.02, 0.03, 0.03]
    assert elapsed >= 0.09  # the waits were slept, not only computed
    assert body.calls == 5


async def test_jitter_adds_up_to_its_seconds_to_each_wait() -> None:
    body = Flaky(*[TimeoutError("slow")] * 5)
    seen: list[ToolRetryAttempt] = []
    retry = ToolRetry(
        tools=TOOLS,
        max_attempts=6,
        initial_delay=0.001,
        max_delay=0.001,
        jitter=0.01,
        on_retry=seen.append,
    )
    agent, _ = agent_for(body, retry)

    await agent.invoke_async("Go")

    delays = [n.delay for n in seen]
    assert all(0.001 <= delay <= 0.011 for delay in delays)
    assert len(set(delays)) > 1


async def test_cancelling_the_run_during_a_backoff_ends_it_promptly() -> None:
    body = Flaky(TimeoutError("slow"), TimeoutError("slow"))

    def cancel_soon(notice: ToolRetryAttempt) -> None:
        agent.cancel()

    agent, model = agent_for(
        body, ToolRetry(tools=TOOLS, initial_delay=30, max_delay=30, jitter=0, on_retry=cancel_soon)
    )
    started = time.monotonic()
    with anyio.fail_after(5):
        result = await agent.invoke_async("Go")

    assert time.monotonic() - started < 1
    assert result.stop_reason == "cancelled"
    assert body.calls == 1  # no attempt started after the cancel
    assert len(model.requests) == 1


async def test_a_failure_after_the_run_was_cancelled_announces_no_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[ToolRetryAttempt] = []
    calls = 0

    @tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        nonlocal calls
        calls += 1
        agent.cancel()  # the operator cancels while the call is in flight
        raise ConnectionError("reset")

    agent = Agent(ScriptedModel([call("fetch", url="u"), "Done."]), tools=[fetch])
    agent.add_middleware(ExecuteToolStage, ToolRetry(tools=TOOLS, on_retry=seen.append, **FAST))

    with caplog.at_level(logging.INFO, logger="stageware.middleware"):
        result = await agent.invoke_async("Go")

    assert result.stop_reason == "cancelled"
    assert (calls, seen) == (1, [])
    assert "retrying" not in caplog.text


def test_the_tools_to_retry_must_be_named() -> None:
    # A retry runs the tool again: there is no "every tool" default that would re-run
    # a refund whose answer was lost after the money moved.
    with pytest.raises(TypeError, match="tools"):
        ToolRetry()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


async def test_a_task_cancelled_during_a_backoff_stops_waiting() -> None:
    body = Flaky(TimeoutError("slow"), TimeoutError("slow"))
    agent, _ = agent_for(body, ToolRetry(tools=TOOLS, initial_delay=30, max_delay=30, jitter=0))

    started = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await agent.invoke_async("Go")

    assert scope.cancelled_caught
    assert time.monotonic() - started < 2
    assert body.calls == 1


async def test_interrupts_pass_through_and_are_not_retried() -> None:
    calls = 0

    @tool
    def refund(order_id: int, context: ToolContext) -> str:
        """Refund an order.

        Args:
            order_id: The order.
        """
        nonlocal calls
        calls += 1
        answer = context.interrupt("approve-refund", reason=f"refund {order_id}?")
        if answer != "yes":
            raise TimeoutError("the approver timed out")
        return "refunded"

    model = ScriptedModel([call("refund", order_id=7), "Refunded."])
    agent = Agent(model, tools=[refund])
    agent.add_middleware(ExecuteToolStage, ToolRetry(tools=TOOLS, **FAST))

    first = await agent.invoke_async("Refund order 7")
    assert first.stop_reason == "interrupt"
    assert calls == 1

    answer = [{"interruptResponse": {"interruptId": first.interrupts[0].id, "response": "yes"}}]
    second = await agent.invoke_async(answer)
    assert second.text == "Refunded."
    assert tool_result_text(model) == "success: refunded"


async def test_streamed_events_of_every_attempt_stream_and_one_result_does() -> None:
    attempts = 0

    @tool
    async def crawl(url: str) -> AsyncIterator[str]:
        """Crawl a site.

        Args:
            url: The site.
        """
        nonlocal attempts
        attempts += 1
        yield f"attempt {attempts} started"
        if attempts == 1:
            raise ConnectionError("reset")
        yield "crawled"

    model = ScriptedModel([call("crawl", url="u"), "Done."])
    agent = Agent(model, tools=[crawl])
    agent.add_middleware(ExecuteToolStage, ToolRetry(tools=TOOLS, **FAST))

    streamed: list[object] = []
    async for event in agent.stream_async("Go"):
        if isinstance(event, ToolStreamEvent):
            streamed.append(event.data)
        elif isinstance(event, ToolResultEvent):
            streamed.append(event.tool_result["status"])
        elif isinstance(event, AgentResultEvent):
            streamed.append(event.result.text)

    # The last value a generator tool yields streams too, and is its result.
    assert streamed == ["attempt 1 started", "attempt 2 started", "crawled", "success", "Done."]


async def test_an_exception_raised_by_inner_middleware_passes_through() -> None:
    body = Flaky()
    failures = 0

    async def breaks(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        nonlocal failures
        failures += 1
        raise TimeoutError("middleware timed out")
        yield  # an async generator

    agent, model = agent_for(body, ToolRetry(tools=TOOLS, **FAST))
    agent.add_middleware(ExecuteToolStage, breaks)  # inside the retry

    await agent.invoke_async("Go")

    assert failures == 1
    assert tool_result_text(model) == "error: Error: middleware timed out"


async def test_a_successful_call_runs_once(caplog: pytest.LogCaptureFixture) -> None:
    body = Flaky()
    agent, model = agent_for(body, ToolRetry(tools=TOOLS, **FAST))

    with caplog.at_level(logging.INFO, logger="stageware.middleware"):
        await agent.invoke_async("Go")

    assert body.calls == 1
    assert tool_result_text(model) == "success: fetched"
    assert not caplog.records


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be at least 1, got 0"),
        ({"initial_delay": -1}, "initial_delay must be a number of seconds >= 0, got -1"),
        ({"jitter": float("nan")}, "jitter must be a number of seconds >= 0, got nan"),
        ({"tools": "fetch"}, "tools='fetch' is a string; pass a list of tool names"),
        ({"tools": []}, "tools is empty"),
        ({"tools": ["fetch", 3]}, "tools holds 3, not a tool name"),
        ({"on": (ValueError, "x")}, "on holds 'x', not an exception type"),
        ({"on": ValueError}, "on must be a tuple of exception types"),
    ],
)
async def test_bad_options_are_refused_when_it_is_built(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(")):
        ToolRetry(**{"tools": TOOLS, **options})


def test_repr_names_the_tools_and_the_errors() -> None:
    assert repr(ToolRetry(tools=["b", "a"])) == (
        "ToolRetry(tools=['a', 'b'], max_attempts=3, on=(TimeoutError, ConnectionError))"
    )
