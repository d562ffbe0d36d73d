"""A custom model's malformed or empty stream: one clear error, and nothing in the history.

The model here is the smallest custom ``Model``: it yields whatever events the test gives
it, typed as ``object`` because a model in the wild is not type-checked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import pytest

from stageware import Agent, ModelError, StreamAssemblyError, StreamEvent
from stageware._host.models import ResponseAssembler

pytestmark = pytest.mark.anyio

START: dict[str, Any] = {"messageStart": {"role": "assistant"}}
STOP: dict[str, Any] = {"messageStop": {"stopReason": "end_turn"}}


class EventsModel:
    """Streams the given events, as they are."""

    def __init__(self, events: Sequence[object]) -> None:
        self.events = events

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        for event in self.events:
            yield cast("StreamEvent", event)


def text(value: object, index: int = 0) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": value}, "contentBlockIndex": index}}


@pytest.mark.parametrize(
    ("events", "message"),
    [
        pytest.param(
            [START, None, STOP],
            "model stream event 1 (None): a stream event must be a dict, got None",
            id="None event",
        ),
        pytest.param(
            [START, text(42), STOP],
            "model stream event 1 ({'contentBlockDelta': {'delta': {'text': 42}, "
            "'contentBlockIndex': 0}}): the text delta must be a str, got int 42",
            id="int text delta",
        ),
        pytest.param(
            [START, text("Hi"), {"citation": {"url": "x"}}, STOP],
            "model stream event 2 ({'citation': {'url': 'x'}}): unknown event type 'citation'; "
            "a stream event is one of messageStart, contentBlockStart, contentBlockDelta, "
            "contentBlockStop, messageStop, metadata",
            id="unknown event type",
        ),
        pytest.param(
            [START, {"contentBlockDelta": {"delta": {"image": "x"}}}, STOP],
            "model stream event 1 ({'contentBlockDelta': {'delta': {'image': 'x'}}}): a delta "
            "has exactly one of the keys text, toolUse, reasoningContent, got ['image']",
            id="unknown delta type",
        ),
        pytest.param(
            [START, {"contentBlockStart": {"start": {"toolUse": {"name": "f"}}}}, STOP],
            "model stream event 1 ({'contentBlockStart': {'start': {'toolUse': {'name': 'f'}}}})"
            ": toolUse.toolUseId must be a str, got None",
            id="tool use without an id",
        ),
        pytest.param(
            [START, text("Hi"), {"messageStop": dict[str, Any]()}],
            "model stream event 2 ({'messageStop': {}}): messageStop.stopReason must be a str, "
            "got None",
            id="stop without a reason",
        ),
        pytest.param(
            [
                START,
                text("Hi"),
                STOP,
                {"metadata": {"usage": {"inputTokens": "5"}, "metrics": {"latencyMs": 1}}},
            ],
            "model stream event 3 ({'metadata': {'usage': {'inputTokens': '5'}, 'metrics': "
            "{'latencyMs': 1}}}): usage.inputTokens must be an int, got str '5'",
            id="usage that is not a count",
        ),
    ],
)
async def test_a_malformed_event_is_one_error_naming_it_and_its_position(
    events: list[object], message: str
) -> None:
    agent = Agent(EventsModel(events))

    with pytest.raises(StreamAssemblyError) as caught:
        await agent.invoke_async("Hi")

    assert str(caught.value) == message
    assert caught.value.event is events[caught.value.event_index or 0]
    assert isinstance(caught.value, ModelError)
    # The turn never entered the history: no empty or partial assistant message.
    assert [entry["role"] for entry in agent.messages] == ["user"]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        pytest.param([], "the model stream was empty: it ended before its first event", id="none"),
        pytest.param(
            [START, STOP],
            "the model stream carried no content (stop reason 'end_turn'): an empty assistant "
            "message is not a response",
            id="start and stop only",
        ),
        pytest.param(
            [
                START,
                {"contentBlockStop": {"contentBlockIndex": 0}},
                {"messageStop": {"stopReason": "max_tokens"}},
            ],
            "the model stream carried no content (stop reason 'max_tokens')",
            id="an empty block",
        ),
        pytest.param(
            [
                START,
                {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": ""}}},
                {"contentBlockStop": {"contentBlockIndex": 0}},
                STOP,
            ],
            "the model stream carried no content (stop reason 'end_turn')",
            id="a blank text block",
        ),
    ],
)
async def test_an_empty_stream_is_an_error_and_nothing_is_appended(
    events: list[object], message: str
) -> None:
    agent = Agent(EventsModel(events))

    with pytest.raises(StreamAssemblyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await agent.invoke_async("Hi")

    assert [entry["role"] for entry in agent.messages] == ["user"]


def test_the_assembler_reports_a_bad_event_where_it_arrives() -> None:
    # Not at finish(): a host streaming events on sees the error at the event.
    assembler = ResponseAssembler()
    assembler.add(cast("StreamEvent", START))

    with pytest.raises(StreamAssemblyError, match=r"^model stream event 1 \(\['text'\]\)"):
        assembler.add(cast("StreamEvent", ["text"]))


def test_stream_assembly_error_is_still_a_value_error() -> None:
    # It was one before it became a ModelError; callers that caught ValueError still do.
    assert issubclass(StreamAssemblyError, ValueError)
