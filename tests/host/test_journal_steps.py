"""Each model call and tool call under a journal is one step, replayed as it happened.

A run records its steps in a ``MemoryJournal``; a fresh agent given the same prompt under
a journal holding those records (a replay) calls no model and runs no tool, and ends the
same way: the same results for concurrent calls that finished in another order, the same
interrupt, the same errors (of the same class, with their attributes), the same hooks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from stageware import (
    AfterModelCallEvent,
    AfterToolCallEvent,
    Agent,
    AgentResult,
    ContextWindowOverflowError,
    Messages,
    ModelError,
    ModelRetryStrategy,
    ModelThrottledError,
    ScriptedModel,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolContext,
    ToolSpec,
    ToolStreamEvent,
    tool,
)
from stageware._host._journal import current_journal, journal_scope
from stageware._host._journal_data import ReplayedError, describe_error, rebuild_error

from .agent_helpers import calls, collect, result_text, tool_results
from .journal_helpers import MemoryJournal

KEY = "stageware:test:s1:w1"


async def record_and_replay(
    build: Callable[[], Agent], prompt: str
) -> tuple[tuple[MemoryJournal, Agent, AgentResult], tuple[MemoryJournal, Agent, AgentResult]]:
    """Run *prompt* on an agent under a new journal, then on a fresh one replaying it."""
    runs: list[tuple[MemoryJournal, Agent, AgentResult]] = []
    book = None
    for _ in range(2):
        journal = MemoryJournal(KEY, book)
        agent = build()
        with journal_scope(journal):
            result = await agent.invoke_async(prompt)
        runs.append((journal, agent, result))
        book = journal.book
    return runs[0], runs[1]


@pytest.mark.anyio
async def test_concurrent_calls_finishing_in_reverse_order_replay_their_own_results() -> None:
    finished: list[str] = []

    @tool
    async def fetch(value: str, delay: float) -> str:
        """Fetch a value after a delay.

        Args:
            value: What to return.
            delay: Seconds to wait first.
        """
        await anyio.sleep(delay)
        finished.append(value)
        return f"fetched {value}"

    def build() -> Agent:
        model = ScriptedModel(
            [
                calls(
                    ("fetch", {"value": "slow", "delay": 0.2}, "t1"),
                    ("fetch", {"value": "fast", "delay": 0.0}, "t2"),
                ),
                "done",
            ]
        )
        return Agent(model, tools=[fetch])

    (first, first_agent, _), (replay, replayed_agent, result) = await record_and_replay(
        build, "fetch both"
    )
    assert finished == ["fast", "slow"]
    # Places in the order of the calls; records in the order the calls finished.
    assert [(entry.place, entry.name) for entry in first.book.entries] == [
        (0, "model:scripted"),
        (2, "tool:fetch"),
        (1, "tool:fetch"),
        (3, "model:scripted"),
    ]
    assert replay.ran == []
    assert result.text == "done"
    assert [result_text(r) for r in tool_results(replayed_agent.messages[2])] == [
        "fetched slow",
        "fetched fast",
    ]
    assert replayed_agent.messages == first_agent.messages


@pytest.mark.anyio
async def test_a_tool_interrupt_replays_and_is_registered_the_same_way() -> None:
    ran: list[str] = []

    @tool
    def refund(order: str, tool_context: ToolContext) -> str:
        """Refund an order once a human approves.

        Args:
            order: The order id.
        """
        ran.append(order)
        approved = tool_context.interrupt("approve", reason={"order": order})
        return f"refunded {order}" if approved else "not refunded"

    def build() -> Agent:
        return Agent(ScriptedModel([calls(("refund", {"order": "A1"}, "t1"))]), tools=[refund])

    (_first, first_agent, stopped), (replay, replayed_agent, replayed) = await record_and_replay(
        build, "refund A1"
    )
    assert ran == ["A1"]  # once: the replay's call is handed back its interrupt
    assert replay.ran == []
    assert replay.replayed == ["model:scripted", "tool:refund"]
    assert stopped.stop_reason == replayed.stop_reason == "interrupt"
    assert replayed.interrupts == stopped.interrupts
    assert replayed_agent.pending_interrupts == first_agent.pending_interrupts
    (interrupt,) = replayed_agent.pending_interrupts
    assert (interrupt.name, interrupt.reason) == ("approve", {"order": "A1"})


@pytest.mark.anyio
async def test_model_errors_replay_with_their_class_and_attributes() -> None:
    seen: list[tuple[str, float | None]] = []

    def build() -> Agent:
        model = ScriptedModel(
            [ModelThrottledError("slow down", retry_after=0.01, status_code=429), "hello"]
        )
        agent = Agent(model, retry_strategy=ModelRetryStrategy(max_attempts=3))

        def after(event: AfterModelCallEvent) -> None:
            error = event.exception
            seen.append(
                (
                    type(error).__name__,
                    error.retry_after if isinstance(error, ModelThrottledError) else None,
                )
            )

        agent.add_hook(after, AfterModelCallEvent)
        return agent

    (first, _, result), (replay, _, replayed) = await record_and_replay(build, "hi")
    assert first.ran == ["model:scripted", "model:scripted"]
    assert replay.ran == []
    assert result.text == replayed.text == "hello"
    assert seen == [("ModelThrottledError", 0.01), ("NoneType", None)] * 2


@pytest.mark.anyio
async def test_an_error_that_ends_the_run_is_raised_again_on_a_replay() -> None:
    def build() -> Agent:
        return Agent(ScriptedModel([ModelError("refused", model_id="m", status_code=400)]))

    journals: list[MemoryJournal] = []
    raised: list[ModelError] = []
    for _ in range(2):
        journal = MemoryJournal(KEY, journals[-1].book if journals else None)
        journals.append(journal)
        with journal_scope(journal), pytest.raises(ModelError) as caught:
            await build().invoke_async("hi")
        raised.append(caught.value)
    first, again = raised
    assert type(again) is ModelError
    assert again is not first
    assert (str(again), again.model_id, again.status_code) == ("refused", "m", 400)
    assert journals[1].ran == []


@pytest.mark.anyio
async def test_a_context_window_overflow_replays_as_the_same_stop() -> None:
    def build() -> Agent:
        return Agent(ScriptedModel(["never"], context_window=1))

    (first, _, result), (replay, _, replayed) = await record_and_replay(build, "a long prompt")
    assert result.stop_reason == replayed.stop_reason == "context_window_overflow"
    assert isinstance(replayed.error, ContextWindowOverflowError)
    assert first.ran == ["model:scripted"]
    assert replay.ran == []


@pytest.mark.anyio
async def test_tool_errors_replay_with_the_exception_hooks_saw() -> None:
    seen: list[str] = []

    @tool
    def charge(amount: int) -> str:
        """Charge an amount.

        Args:
            amount: In cents.
        """
        raise ValueError(f"cannot charge {amount}")

    def build() -> Agent:
        agent = Agent(
            ScriptedModel([calls(("charge", {"amount": 5}, "t1")), "sorry"]), tools=[charge]
        )
        agent.add_hook(lambda e: seen.append(repr(e.exception)), AfterToolCallEvent)
        return agent

    (_, first_agent, _), (replay, replayed_agent, _) = await record_and_replay(build, "charge")
    assert replay.ran == []
    assert seen == ["ValueError('cannot charge 5')"] * 2
    assert replayed_agent.messages == first_agent.messages


@pytest.mark.anyio
async def test_tool_stream_data_replays_when_it_is_json() -> None:
    class Progress:
        """Not JSON: streamed on the first run only."""

    @tool
    async def report(tool_context: ToolContext) -> AsyncIterator[Any]:
        """Report progress."""
        yield {"percent": 50}
        yield Progress()
        yield "finished"

    def build() -> Agent:
        return Agent(ScriptedModel([calls(("report", {}, "t1")), "ok"]), tools=[report])

    streamed: list[list[object]] = []
    book = None
    for _ in range(2):
        journal = MemoryJournal(KEY, book)
        with journal_scope(journal):
            events, _ = await collect(build(), "go")
        streamed.append([e.data for e in events if isinstance(e, ToolStreamEvent)])
        book = journal.book
    first, again = streamed
    # (The last value is the result, and streamed too.)
    assert len(first) == 3
    assert isinstance(first[1], Progress)
    assert first[::2] == again == [{"percent": 50}, "finished"]


@pytest.mark.anyio
async def test_an_agent_used_as_a_tool_runs_inside_its_parents_step() -> None:
    journals_seen: list[object] = []

    @tool
    def lookup(order: str) -> str:
        """Look an order up.

        Args:
            order: The order id.
        """
        journals_seen.append(current_journal())
        return f"{order}: shipped"

    sub_models: list[ScriptedModel] = []

    def build() -> Agent:
        sub_model = ScriptedModel([calls(("lookup", {"order": "A1"}, "s1")), "A1 shipped"])
        sub_models.append(sub_model)
        clerk = Agent(sub_model, tools=[lookup], name="clerk")
        model = ScriptedModel([calls(("clerk", {"input": "where is A1?"}, "t1")), "It shipped."])
        return Agent(model, tools=[clerk.as_tool()])

    (first, _, result), (replay, _, replayed) = await record_and_replay(build, "where is A1?")
    assert first.ran == ["model:scripted", "tool:clerk", "model:scripted"]
    assert journals_seen == [None]  # the sub-agent's own calls are plain, inside the step
    assert len(sub_models[0].requests) == 2
    assert sub_models[1].requests == []
    assert replay.ran == []
    assert replayed.text == result.text == "It shipped."


@pytest.mark.anyio
async def test_a_cancelled_model_call_records_nothing() -> None:
    agent = Agent(ScriptedModel(["a long answer " * 20], chunk_size=1, chunk_delay=0.01))
    journal = MemoryJournal(KEY)
    results: list[AgentResult] = []

    async def run() -> None:
        with journal_scope(journal):
            results.append(await agent.invoke_async("talk"))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await anyio.sleep(0.05)
        agent.cancel()
    assert [result.stop_reason for result in results] == ["cancelled"]
    assert journal.ran == ["model:scripted"]
    assert journal.book.entries == []


def test_an_error_whose_class_is_not_imported_replays_as_a_replayed_error() -> None:
    description = describe_error(ValueError("bad"))
    description["type"] = "not_imported_anywhere:Boom"
    rebuilt = rebuild_error(description)
    assert isinstance(rebuilt, ReplayedError)
    assert (str(rebuilt), rebuilt.type_name) == (
        "not_imported_anywhere:Boom: bad",
        description["type"],
    )


def test_an_error_is_described_as_json_data_and_rebuilt_as_itself() -> None:
    error = ModelThrottledError("slow", retry_after=2.5, model_id="m", status_code=429)
    error.add_note("a note")
    rebuilt = rebuild_error(describe_error(error))
    assert type(rebuilt) is ModelThrottledError
    assert (str(rebuilt), rebuilt.retry_after, rebuilt.model_id, rebuilt.status_code) == (
        "slow",
        2.5,
        "m",
        429,
    )
    assert rebuilt.__notes__ == ["a note"]


class StatefulModel:
    """Counts its turns in the agent's model state, as a provider keeps its last response id.

    The first turn calls ``noop``; the next says which turn it is, as the state counts.
    """

    model_id = "stateful"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        state: dict[str, Any] = kwargs["model_state"]
        state["turns"] = state.get("turns", 0) + 1
        yield {"messageStart": {"role": "assistant"}}
        if any("toolResult" in block for message in messages for block in message["content"]):
            yield {"contentBlockDelta": {"delta": {"text": f"turn {state['turns']}"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "noop"}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@pytest.mark.anyio
async def test_the_model_state_a_call_wrote_is_restored_on_a_replay() -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    first = MemoryJournal(KEY)
    with journal_scope(first):
        result = await Agent(StatefulModel(), tools=[noop]).invoke_async("hi")
    assert result.text == "turn 2"
    # Crashed after the first model call: the second runs on the replay, with the state
    # the first left.
    replay = MemoryJournal(KEY, first.book.until(1))
    model = StatefulModel()
    with journal_scope(replay):
        replayed = await Agent(model, tools=[noop]).invoke_async("hi")
    assert replay.replayed == ["model:stateful"]
    assert model.calls == 1
    assert replayed.text == "turn 2"


@pytest.mark.anyio
async def test_a_retried_tool_call_is_a_step_of_its_own_named_by_its_call() -> None:
    attempts: list[int] = []

    @tool
    def flaky() -> str:
        """Fails the first time."""
        attempts.append(len(attempts) + 1)
        return f"attempt {len(attempts)}"

    def build() -> Agent:
        agent = Agent(ScriptedModel([calls(("flaky", {}, "t1")), "done"]), tools=[flaky])

        def retry_once(event: AfterToolCallEvent) -> None:
            event.retry = result_text(event.result) == "attempt 1"

        agent.add_hook(retry_once, AfterToolCallEvent)
        return agent

    (first, first_agent, _), (replay, replayed_agent, _) = await record_and_replay(build, "go")
    assert first.ran == ["model:scripted", "tool:flaky", "tool:flaky:retry:t1", "model:scripted"]
    assert attempts == [1, 2]
    assert replay.ran == []
    assert replayed_agent.messages == first_agent.messages
    assert [result_text(r) for r in tool_results(replayed_agent.messages[2])] == ["attempt 2"]
