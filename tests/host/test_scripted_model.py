"""ScriptedModel plays scripts as exact Converse streams; ResponseAssembler reads them back."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import pytest

from stageware import Model
from stageware._generated.payloads import Message, Messages, StreamEvent, ToolSpec, Usage
from stageware._host.models._scripted import (
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ScriptExhaustedError,
)
from stageware._host.models._streaming import (
    CollectedResponse,
    ResponseAssembler,
    StreamAssemblyError,
    collect_response,
)


def _user(text: str) -> Message:
    return {"role": "user", "content": [{"text": text}]}


def _tool_result(tool_use_id: str, text: str) -> Message:
    return {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": tool_use_id,
                    "status": "success",
                    "content": [{"text": text}],
                }
            }
        ],
    }


async def _events(model: ScriptedModel, messages: Messages | None = None) -> list[StreamEvent]:
    return [event async for event in model.stream(messages or [_user("hi")])]


async def _events_until_error(
    stream: AsyncIterator[StreamEvent], received: list[StreamEvent]
) -> None:
    async for event in stream:
        received.append(event)


_ZERO_USAGE: Usage = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}


def _tail(stop_reason: Any, usage: Usage) -> list[StreamEvent]:
    return [
        {"messageStop": {"stopReason": stop_reason}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}},
    ]


# --- event order and content ------------------------------------------------------------


@pytest.mark.anyio
async def test_text_turn_streams_chunks_then_stop_and_metadata() -> None:
    model = ScriptedModel([ScriptedTurn(text="Hello, world", usage=_ZERO_USAGE)], chunk_size=5)
    assert await _events(model) == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hello"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": ", wor"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "ld"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        *_tail("end_turn", _ZERO_USAGE),
    ]


@pytest.mark.anyio
async def test_str_entry_is_a_text_turn() -> None:
    from_str = await _events(ScriptedModel(["Hi there"]))
    from_turn = await _events(ScriptedModel([ScriptedTurn(text="Hi there")]))
    assert from_str == from_turn


@pytest.mark.anyio
async def test_reasoning_streams_as_its_own_block_before_text() -> None:
    turn = ScriptedTurn(text="42", reasoning="six times seven", usage=_ZERO_USAGE)
    events = await _events(ScriptedModel([turn], chunk_size=8))
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": "six time"}},
                "contentBlockIndex": 0,
            }
        },
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": "s seven"}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "42"}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        *_tail("end_turn", _ZERO_USAGE),
    ]


@pytest.mark.anyio
async def test_tool_calls_stream_start_sorted_json_fragments_and_stop() -> None:
    turn = ScriptedTurn(
        text="Let me check.",
        tool_calls=[
            ScriptedToolCall("weather", {"unit": "C", "city": "Oslo"}),
            ScriptedToolCall("clock"),
        ],
        usage=_ZERO_USAGE,
    )
    events = await _events(ScriptedModel([turn], chunk_size=20))
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Let me check."}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "tooluse_0_0", "name": "weather"}},
                "contentBlockIndex": 1,
            }
        },
        # json.dumps(sort_keys=True) is '{"city": "Oslo", "unit": "C"}', 29 characters.
        {
            "contentBlockDelta": {
                "delta": {"toolUse": {"input": '{"city": "Oslo", "un'}},
                "contentBlockIndex": 1,
            }
        },
        {
            "contentBlockDelta": {
                "delta": {"toolUse": {"input": 'it": "C"}'}},
                "contentBlockIndex": 1,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "tooluse_0_1", "name": "clock"}},
                "contentBlockIndex": 2,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}, "contentBlockIndex": 2}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        *_tail("tool_use", _ZERO_USAGE),
    ]


def _tool_use_ids(events: list[StreamEvent]) -> list[str]:
    return [
        event["contentBlockStart"]["start"]["toolUse"]["toolUseId"]
        for event in events
        if "contentBlockStart" in event
    ]


@pytest.mark.anyio
async def test_default_tool_use_ids_count_calls_and_positions() -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("a"), ScriptedToolCall("b")]),
            ScriptedTurn(tool_calls=[ScriptedToolCall("c")]),
        ]
    )
    assert _tool_use_ids(await _events(model)) == ["tooluse_0_0", "tooluse_0_1"]
    assert _tool_use_ids(await _events(model)) == ["tooluse_1_0"]


@pytest.mark.anyio
async def test_explicit_tool_use_ids_are_used() -> None:
    turn = ScriptedTurn(tool_calls=[ScriptedToolCall("a", id="call-1"), ScriptedToolCall("b")])
    assert _tool_use_ids(await _events(ScriptedModel([turn]))) == ["call-1", "tooluse_0_1"]


def _stop_reason(events: list[StreamEvent]) -> str:
    return next(event["messageStop"]["stopReason"] for event in events if "messageStop" in event)


@pytest.mark.anyio
async def test_stop_reason_defaults_and_override() -> None:
    model = ScriptedModel(
        [
            "plain",
            ScriptedTurn(tool_calls=[ScriptedToolCall("a")]),
            ScriptedTurn(text="cut o", stop_reason="max_tokens"),
            ScriptedTurn(tool_calls=[ScriptedToolCall("a")], stop_reason="end_turn"),
        ]
    )
    reasons = [_stop_reason(await _events(model)) for _ in range(4)]
    assert reasons == ["end_turn", "tool_use", "max_tokens", "end_turn"]


@pytest.mark.anyio
async def test_empty_turn_has_no_content_blocks() -> None:
    events = await _events(ScriptedModel([ScriptedTurn()]))
    assert [next(iter(event)) for event in events] == ["messageStart", "messageStop", "metadata"]


# --- usage -------------------------------------------------------------------------------


def _usage(events: list[StreamEvent]) -> Usage:
    return events[-1]["metadata"]["usage"]


@pytest.mark.anyio
async def test_default_usage_is_a_deterministic_character_estimate() -> None:
    messages: Messages = [
        _user("What is the weather?"),  # 20
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Oslo"}}}
            ],  # '{"city": "Oslo"}' is 16
        },
        _tool_result("t1", "rainy"),  # 5
    ]
    turn = ScriptedTurn(
        text="It rains.",  # 9
        reasoning="ok",  # 2
        tool_calls=[ScriptedToolCall("umbrella", {"open": True})],  # '{"open": true}' is 14
    )
    model = ScriptedModel([turn, turn])
    first = _usage([e async for e in model.stream(messages, system_prompt="Be brief.")])  # 9
    second = _usage([e async for e in model.stream(messages, system_prompt="Be brief.")])
    expected_in = math.ceil((20 + 16 + 5 + 9) / 4)
    expected_out = math.ceil((9 + 2 + 14) / 4)
    assert first == {
        "inputTokens": expected_in,
        "outputTokens": expected_out,
        "totalTokens": expected_in + expected_out,
    }
    assert second == first


@pytest.mark.anyio
async def test_usage_counts_the_system_prompt_once_when_given_both_ways() -> None:
    model = ScriptedModel(["", ""])
    as_text = _usage(
        [e async for e in model.stream([_user("abcd")], system_prompt="1234567890123")]
    )
    both = _usage(
        [
            e
            async for e in model.stream(
                [_user("abcd")],
                system_prompt="1234567890123",
                system_prompt_content=[
                    {"text": "1234567890123"},
                    {"cachePoint": {"type": "default"}},
                ],
            )
        ]
    )
    assert as_text["inputTokens"] == both["inputTokens"] == math.ceil(17 / 4)


@pytest.mark.anyio
async def test_explicit_usage_is_streamed_as_a_copy() -> None:
    usage: Usage = {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
    events = await _events(ScriptedModel([ScriptedTurn(text="x", usage=usage)]))
    streamed = _usage(events)
    assert streamed == usage
    assert streamed is not usage


# --- errors -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_exception_entry_is_raised_before_any_event() -> None:
    model = ScriptedModel([ValueError("throttled"), "after"])
    received: list[StreamEvent] = []
    with pytest.raises(ValueError, match="throttled"):
        await _events_until_error(model.stream([_user("hi")]), received)
    assert received == []
    assert _stop_reason(await _events(model)) == "end_turn"


@pytest.mark.anyio
async def test_turn_error_is_raised_after_the_given_number_of_events() -> None:
    turn = ScriptedTurn(text="abcdef", error=ConnectionError("dropped"), error_after_chunks=3)
    received: list[StreamEvent] = []
    with pytest.raises(ConnectionError, match="dropped"):
        await _events_until_error(ScriptedModel([turn], chunk_size=2).stream([]), received)
    assert received == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "ab"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "cd"}, "contentBlockIndex": 0}},
    ]


@pytest.mark.anyio
async def test_turn_error_at_zero_chunks_and_past_the_end() -> None:
    at_start = ScriptedTurn(text="x", error=TimeoutError("slow"))
    past_end = ScriptedTurn(text="x", error=TimeoutError("late"), error_after_chunks=99)
    model = ScriptedModel([at_start, past_end])
    received: list[StreamEvent] = []
    with pytest.raises(TimeoutError, match="slow"):
        await _events_until_error(model.stream([]), received)
    assert received == []
    with pytest.raises(TimeoutError, match="late"):
        await _events_until_error(model.stream([]), received)
    assert next(iter(received[-1])) == "metadata"


def test_scripted_turn_and_tool_call_validation() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        ScriptedTurn(error=ValueError(), error_after_chunks=-1)
    with pytest.raises(ValueError, match="no error"):
        ScriptedTurn(error_after_chunks=2)
    with pytest.raises(TypeError, match="ScriptedToolCall objects"):
        ScriptedTurn(tool_calls=cast(Any, [{"name": "a"}]))
    with pytest.raises(TypeError, match="JSON-serialisable"):
        ScriptedToolCall("a", {"when": object()})
    turn = ScriptedTurn(tool_calls=[ScriptedToolCall("a")])
    assert turn.tool_calls == (ScriptedToolCall("a"),)


def test_model_construction_validation() -> None:
    with pytest.raises(TypeError, match="exception class"):
        ScriptedModel(cast(Any, [ValueError]))
    with pytest.raises(TypeError, match="script entries"):
        ScriptedModel(cast(Any, [42]))
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedModel([], chunk_size=0)
    with pytest.raises(ValueError, match="chunk_delay"):
        ScriptedModel([], chunk_delay=-1)


# --- callable turns ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_callable_turn_answers_from_the_last_tool_result() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        block = request.messages[-1]["content"][0]
        return f"The weather is {block['toolResult']['content'][0]['text']}."

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("weather")]), respond], chunk_size=100
    )
    await _events(model)
    messages: Messages = [_user("weather?"), _tool_result("tooluse_0_0", "sunny")]
    events = await _events(model, messages)
    assert events[1] == {
        "contentBlockDelta": {"delta": {"text": "The weather is sunny."}, "contentBlockIndex": 0}
    }
    assert seen == [model.requests[1]]


@pytest.mark.anyio
async def test_callable_turn_may_return_a_turn_or_raise() -> None:
    def tool_turn(request: ModelRequest) -> ScriptedTurn:
        return ScriptedTurn(tool_calls=[ScriptedToolCall("a", {"n": len(request.messages)})])

    def failing(request: ModelRequest) -> str:
        raise RuntimeError("responder failed")

    model = ScriptedModel([tool_turn, failing])
    assert _stop_reason(await _events(model)) == "tool_use"
    with pytest.raises(RuntimeError, match="responder failed"):
        await _events(model)


@pytest.mark.anyio
async def test_callable_turn_with_a_wrong_answer_is_a_type_error() -> None:
    def wrong(request: ModelRequest) -> Any:
        return ValueError("oops")

    with pytest.raises(TypeError, match="raise the exception instead"):
        await _events(ScriptedModel([wrong]))


# --- exhaustion ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_exhaustion_names_the_script_length_and_quotes_the_last_user_message() -> None:
    model = ScriptedModel(["one", "two"])
    await _events(model)
    await _events(model)
    long_question = "Please also tell me " + "x" * 200
    messages: Messages = [_user("first"), {"role": "assistant", "content": []}]
    messages.append(_user(long_question))
    with pytest.raises(ScriptExhaustedError) as caught:
        await _events(model, messages)
    message = str(caught.value)
    assert "call #3" in message
    assert "had 2 turn(s)" in message
    assert "'Please also tell me xxx" in message
    assert "x" * 100 not in message  # truncated
    assert "...'" in message
    assert isinstance(caught.value, RuntimeError)


@pytest.mark.anyio
async def test_exhaustion_quotes_a_tool_result_and_handles_no_user_message() -> None:
    model = ScriptedModel([])
    with pytest.raises(ScriptExhaustedError, match=r"\[toolResult t9 success\] done"):
        await _events(model, [_tool_result("t9", "done")])
    with pytest.raises(ScriptExhaustedError, match=r"had 0 turn\(s\).*\(none\)"):
        await _events(model, [{"role": "assistant", "content": [{"text": "hm"}]}])


# --- requests ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_requests_are_recorded_as_deep_copies() -> None:
    messages: Messages = [_user("hello")]
    specs: list[ToolSpec] = [
        {"name": "a", "description": "A.", "inputSchema": {"json": {"type": "object"}}}
    ]
    model = ScriptedModel(["ok"])
    events = [
        e
        async for e in model.stream(
            messages,
            specs,
            "system",
            tool_choice={"auto": {}},
            system_prompt_content=[{"text": "system"}],
            model_state={"ignored": True},
            invocation_state=object(),
        )
    ]
    assert events
    messages[0]["content"][0]["text"] = "changed"
    messages.append(_user("more"))
    specs[0]["name"] = "changed"
    assert model.requests == [
        ModelRequest(
            messages=[_user("hello")],
            tool_specs=[
                {"name": "a", "description": "A.", "inputSchema": {"json": {"type": "object"}}}
            ],
            system_prompt="system",
            system_prompt_content=[{"text": "system"}],
            tool_choice={"auto": {}},
        )
    ]


@pytest.mark.anyio
async def test_each_request_keeps_what_was_sent_on_its_call() -> None:
    model = ScriptedModel(["a", "b", "c", "d"])
    history: Messages = [_user("one")]
    await _events(model, history)
    history += [{"role": "assistant", "content": [{"text": "a"}]}, _user("two")]
    await _events(model, history)
    history[0]["content"][0]["text"] = "edited in place"
    await _events(model, history)
    await _events(model, history[1:])  # a shorter history: nothing shared at position 0
    history.append(_user("after the last call"))
    history[1]["content"].clear()
    first, second, third, fourth = model.requests
    # Read newest first, so a record is assembled before the records it shares with.
    assert fourth.messages == [{"role": "assistant", "content": [{"text": "a"}]}, _user("two")]
    assert third.messages == [
        _user("edited in place"),
        {"role": "assistant", "content": [{"text": "a"}]},
        _user("two"),
    ]
    assert second.messages == [
        _user("one"),
        {"role": "assistant", "content": [{"text": "a"}]},
        _user("two"),
    ]
    assert first.messages == [_user("one")]


@pytest.mark.anyio
async def test_requests_share_the_copies_of_unchanged_messages() -> None:
    # A long conversation costs each call its new messages, not a copy of the history.
    model = ScriptedModel(["a", "b", "c"])
    specs: list[ToolSpec] = [{"name": "a", "description": "A.", "inputSchema": {"json": {}}}]
    history: Messages = [_user("one")]
    await _events_for(model, history, specs)
    history.append(_user("two"))
    await _events_for(model, history, specs)
    history[1] = _user("changed")
    await _events_for(model, history, specs)
    first, second, third = model.requests
    assert second.messages[0] is first.messages[0]
    assert third.messages[0] is first.messages[0]
    assert third.messages[1] is not second.messages[1]
    assert third.tool_specs is first.tool_specs
    assert first.tool_specs is not specs


async def _events_for(
    model: ScriptedModel, messages: Messages, specs: list[ToolSpec]
) -> list[StreamEvent]:
    return [event async for event in model.stream(messages, specs)]


def test_a_request_is_read_only() -> None:
    request = ModelRequest([_user("x")], [], None, None, None)
    with pytest.raises(AttributeError):
        request.messages = []  # type: ignore[misc]
    with pytest.raises(AttributeError):
        request.system_prompt = "other"  # type: ignore[misc]
    assert request == ModelRequest([_user("x")], [], None, None, None)
    assert request != ModelRequest([_user("y")], [], None, None, None)
    assert repr(request) == (
        "ModelRequest(messages=[{'role': 'user', 'content': [{'text': 'x'}]}], tool_specs=[], "
        "system_prompt=None, system_prompt_content=None, tool_choice=None)"
    )


@pytest.mark.anyio
async def test_request_defaults_and_consumption_at_call_time() -> None:
    model = ScriptedModel(["a", "b"])
    assert model.remaining == 2
    stream = model.stream([_user("x")])
    # Consumed and recorded when called, before the stream is iterated.
    assert model.remaining == 1
    assert model.requests == [
        ModelRequest(
            messages=[_user("x")],
            tool_specs=[],
            system_prompt=None,
            system_prompt_content=None,
            tool_choice=None,
        )
    ]
    assert [e async for e in stream][1]["contentBlockDelta"]["delta"] == {"text": "a"}
    assert repr(model) == "ScriptedModel(model_id='scripted', calls=1, remaining=1)"


def test_scripted_model_is_a_model() -> None:
    model: Model = ScriptedModel([], model_id="demo")
    assert isinstance(model, Model)
    assert ScriptedModel([], model_id="demo").model_id == "demo"


# --- pacing and cancellation ---------------------------------------------------------------


@pytest.mark.anyio
async def test_chunk_delay_streams_the_same_events() -> None:
    turn = ScriptedTurn(text="abcdef", tool_calls=[ScriptedToolCall("a", {"k": 1})])
    fast = await _events(ScriptedModel([turn], chunk_size=2))
    slow = await _events(ScriptedModel([turn], chunk_size=2, chunk_delay=0.001))
    assert slow == fast


@pytest.mark.anyio
async def test_chunk_delay_lets_a_test_cancel_mid_stream() -> None:
    model = ScriptedModel(["abcdefgh"], chunk_size=1, chunk_delay=30)
    received: list[StreamEvent] = []
    with anyio.move_on_after(0.05) as scope:
        async for event in model.stream([_user("hi")]):
            received.append(event)
    assert scope.cancelled_caught
    # The first event comes at once; the second waits out a delay the scope cuts short.
    assert received == [{"messageStart": {"role": "assistant"}}]


@pytest.mark.anyio
async def test_instant_stream_still_checkpoints_each_event() -> None:
    model = ScriptedModel(["abc"])
    received: list[StreamEvent] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        async for event in model.stream([_user("hi")]):
            received.append(event)
    assert received == []


# --- assembling streams ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_assembling_a_scripted_stream_reproduces_the_turn() -> None:
    turn = ScriptedTurn(
        text="Checking two things at once, please hold.",
        reasoning="The user wants weather and time.",
        tool_calls=[
            ScriptedToolCall("weather", {"city": "Oslo", "days": [1, 2]}),
            ScriptedToolCall("clock", id="explicit"),
        ],
        usage={"inputTokens": 5, "outputTokens": 6, "totalTokens": 11},
    )
    response = await collect_response(ScriptedModel([turn], chunk_size=3).stream([_user("q")]))
    assert response == CollectedResponse(
        stop_reason="tool_use",
        message={
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": turn.reasoning or ""}}},
                {"text": turn.text},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_0_0",
                        "name": "weather",
                        "input": {"city": "Oslo", "days": [1, 2]},
                    }
                },
                {"toolUse": {"toolUseId": "explicit", "name": "clock", "input": {}}},
            ],
        },
        usage={"inputTokens": 5, "outputTokens": 6, "totalTokens": 11},
        metrics={"latencyMs": 0},
    )


def _assemble(events: list[StreamEvent]) -> CollectedResponse:
    assembler = ResponseAssembler()
    for event in events:
        assembler.add(event)
    return assembler.finish()


def test_assembler_follows_blocks_without_indices() -> None:
    stop_reason, message, usage, metrics = _assemble(
        [
            {"messageStart": {"role": "assistant"}},
            {"contentBlockDelta": {"delta": {"text": "Hel"}}},
            {"contentBlockDelta": {"delta": {"text": "lo"}}},
            {"contentBlockStop": {}},
            {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t", "name": "f"}}}},
            {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"a"'}}}},
            {"contentBlockDelta": {"delta": {"toolUse": {"input": ": 1}"}}}},
            {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "tool_use"}},
        ]
    )
    assert stop_reason == "tool_use"
    assert message == {
        "role": "assistant",
        "content": [
            {"text": "Hello"},
            {"toolUse": {"toolUseId": "t", "name": "f", "input": {"a": 1}}},
        ],
    }
    # No metadata event: zeros.
    assert usage == {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    assert metrics == {"latencyMs": 0}


def test_assembler_keeps_unparsable_tool_input_raw_and_empty_input_as_object() -> None:
    _, message, _, _ = _assemble(
        [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": "t1", "name": "f"}},
                    "contentBlockIndex": 0,
                }
            },
            {
                "contentBlockDelta": {
                    "delta": {"toolUse": {"input": '{"a": '}},
                    "contentBlockIndex": 0,
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": "t2", "name": "g"}},
                    "contentBlockIndex": 1,
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 1}},
            {"messageStop": {"stopReason": "tool_use"}},
        ]
    )
    assert [block["toolUse"]["input"] for block in message["content"]] == ['{"a": ', {}]


def test_assembler_reasoning_signature_and_redacted_content() -> None:
    _, message, _, _ = _assemble(
        [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockDelta": {
                    "delta": {"reasoningContent": {"text": "hmm"}},
                    "contentBlockIndex": 0,
                }
            },
            {
                "contentBlockDelta": {
                    "delta": {"reasoningContent": {"signature": "sig"}},
                    "contentBlockIndex": 0,
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {
                "contentBlockDelta": {
                    "delta": {"reasoningContent": {"redactedContent": "b64"}},
                    "contentBlockIndex": 1,
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 1}},
            {"messageStop": {"stopReason": "end_turn"}},
        ]
    )
    assert message["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}},
        {"reasoningContent": {"redactedContent": "b64"}},
    ]


def test_assembler_orders_by_index_and_copies_metadata() -> None:
    usage: Usage = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
    events: list[StreamEvent] = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "second"}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"text": "first"}, "contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 12}}},
    ]
    assembler = ResponseAssembler()
    for event in events:
        assembler.add(event)
    first = assembler.finish()
    assert first.message["content"] == [{"text": "first"}, {"text": "second"}]
    assert first.metrics == {"latencyMs": 12}
    usage["inputTokens"] = 99
    first.usage["outputTokens"] = 99
    assert assembler.finish().usage == {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}


def test_assembler_without_message_stop_names_what_is_missing() -> None:
    with pytest.raises(StreamAssemblyError, match="ended without messageStop"):
        _assemble(
            [
                {"messageStart": {"role": "assistant"}},
                {"contentBlockDelta": {"delta": {"text": "x"}}},
            ]
        )
    with pytest.raises(StreamAssemblyError, match="without messageStart and messageStop"):
        _assemble([{"contentBlockDelta": {"delta": {"text": "x"}}}])


def test_assembler_rejects_malformed_streams() -> None:
    with pytest.raises(StreamAssemblyError, match="second messageStop"):
        _assemble([{"messageStop": {"stopReason": "end_turn"}}] * 2)
    with pytest.raises(StreamAssemblyError, match="text block but received a tool_use delta"):
        _assemble(
            [
                {"contentBlockDelta": {"delta": {"text": "x"}, "contentBlockIndex": 0}},
                {
                    "contentBlockDelta": {
                        "delta": {"toolUse": {"input": "{}"}},
                        "contentBlockIndex": 0,
                    }
                },
            ]
        )
    with pytest.raises(StreamAssemblyError, match="no contentBlockStart gave its toolUseId"):
        _assemble(
            [
                {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}}},
                {"messageStop": {"stopReason": "tool_use"}},
            ]
        )


def test_assembler_tolerates_a_missing_message_start() -> None:
    response = _assemble(
        [
            {"contentBlockDelta": {"delta": {"text": "x"}}},
            {"messageStop": {"stopReason": "end_turn"}},
        ]
    )
    assert response.message == {"role": "assistant", "content": [{"text": "x"}]}
