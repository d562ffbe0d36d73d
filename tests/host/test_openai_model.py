"""OpenAIModel against a fake OpenAI-compatible server on loopback, on asyncio and trio.

The real ``openai`` client talks HTTP to ``FakeOpenAIServer``; the tests check the stream
events the adapter yields and the request bodies the server received.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from stageware import Model
from stageware._generated.payloads import Message, Messages, StreamEvent, ToolChoice, ToolSpec
from stageware.openai import ModelError, OpenAIModel

from .fake_openai_server import (
    ErrorReply,
    FakeOpenAIServer,
    SSEReply,
    chunk,
    tool_delta,
    usage_chunk,
)

pytestmark = pytest.mark.anyio

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]

WEATHER: ToolSpec = {
    "name": "weather",
    "description": "The weather in a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
TIME: ToolSpec = {
    "name": "time",
    "description": "The time in a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    # No retries, so error tests fail fast; a timeout, so a broken test fails, not hangs.
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=30.0
    ) as client:
        yield client


@pytest.fixture
def model(client: openai.AsyncOpenAI) -> OpenAIModel:
    return OpenAIModel("test-model", client=client)


async def collect(
    model: OpenAIModel, messages: Messages = HELLO, **kwargs: Any
) -> list[StreamEvent]:
    return [event async for event in model.stream(messages, **kwargs)]


async def collect_into(events: list[StreamEvent], stream: AsyncIterator[StreamEvent]) -> None:
    async for event in stream:
        events.append(event)


def assemble(events: list[StreamEvent]) -> list[Any]:
    """The blocks the events describe, in block order: text, or (tool name, parsed input)."""
    blocks: dict[int, Any] = {}
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start["start"]["toolUse"]
            blocks[start.get("contentBlockIndex", -1)] = [tool["name"], ""]
        elif "contentBlockDelta" in event:
            block_delta = event["contentBlockDelta"]
            index = block_delta.get("contentBlockIndex", -1)
            delta = block_delta["delta"]
            if "text" in delta:
                blocks[index] = blocks.get(index, "") + delta["text"]
            elif "toolUse" in delta:
                blocks[index][1] += delta["toolUse"]["input"]
    return [
        (block[0], json.loads(block[1])) if isinstance(block, list) else block
        for _, block in sorted(blocks.items())
    ]


def stop_reason(events: list[StreamEvent]) -> Any:
    return next(event["messageStop"] for event in events if "messageStop" in event)


# --- streaming responses -----------------------------------------------------------------


async def test_text_stream_becomes_events_in_order(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo!"}),
                chunk({}, finish_reason="stop"),
                usage_chunk(12, 3),
            ]
        )
    )

    events = await collect(model)

    metadata = events[-1]["metadata"]
    assert metadata["metrics"]["latencyMs"] >= 0
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hel"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "lo!"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {
            "metadata": {
                "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
                "metrics": metadata["metrics"],
            }
        },
    ]


async def test_two_tool_calls_one_after_another(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply(
            [
                chunk({"role": "assistant", "content": None}),
                chunk(tool_delta(0, id="call_a", name="weather", arguments="")),
                chunk(tool_delta(0, arguments='{"city": ')),
                chunk(tool_delta(0, arguments='"Oslo"}')),
                chunk(tool_delta(1, id="call_b", name="time", arguments='{"city"')),
                chunk(tool_delta(1, arguments=': "Lima"}')),
                chunk({}, finish_reason="tool_calls"),
                usage_chunk(20, 10),
            ]
        )
    )

    events = await collect(model, tool_specs=[WEATHER, TIME])

    assert events[:-1] == [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "call_a", "name": "weather"}},
                "contentBlockIndex": 0,
            }
        },
        {
            "contentBlockDelta": {
                "delta": {"toolUse": {"input": '{"city": '}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '"Oslo"}'}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "call_b", "name": "time"}},
                "contentBlockIndex": 1,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city"'}}, "contentBlockIndex": 1}},
        {
            "contentBlockDelta": {
                "delta": {"toolUse": {"input": ': "Lima"}'}},
                "contentBlockIndex": 1,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    assert "metadata" in events[-1]


async def test_interleaved_tool_calls_stay_in_separate_blocks(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    # Fragments of two calls alternate; no block may close before its input is complete.
    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_a", name="weather", arguments="")),
                chunk(tool_delta(1, id="call_b", name="time", arguments="")),
                chunk(tool_delta(0, arguments='{"city": ')),
                chunk(tool_delta(1, arguments='{"city": ')),
                chunk(tool_delta(0, arguments='"Oslo"}')),
                chunk(tool_delta(1, arguments='"Lima"}')),
                chunk({}, finish_reason="tool_calls"),
            ]
        )
    )

    events = await collect(model, tool_specs=[WEATHER, TIME])

    kinds = [next(iter(event)) for event in events]
    assert kinds == [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    indexes = [
        value.get("contentBlockIndex")
        for event in events
        for value in event.values()
        if isinstance(value, dict) and "contentBlockIndex" in value
    ]
    assert indexes == [0, 0, 0, 0, 1, 1, 1]
    assert assemble(events) == [("weather", {"city": "Oslo"}), ("time", {"city": "Lima"})]
    starts = [
        event["contentBlockStart"]["start"] for event in events if "contentBlockStart" in event
    ]
    assert starts == [
        {"toolUse": {"toolUseId": "call_a", "name": "weather"}},
        {"toolUse": {"toolUseId": "call_b", "name": "time"}},
    ]


async def test_text_then_tool_call_and_whole_calls_in_one_chunk(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    # Ollama-style: each call arrives whole; no id is sent, so the adapter makes one up.
    server.reply(
        SSEReply(
            [
                chunk({"content": "Let me check."}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                            },
                            {"index": 1, "function": {"name": "time", "arguments": "{}"}},
                        ]
                    }
                ),
                chunk({}, finish_reason="tool_calls"),
            ]
        )
    )

    events = await collect(model, tool_specs=[WEATHER, TIME])

    assert assemble(events) == ["Let me check.", ("weather", {"city": "Oslo"}), ("time", {})]
    ids = [
        event["contentBlockStart"]["start"]["toolUse"]["toolUseId"]
        for event in events
        if "contentBlockStart" in event
    ]
    assert len(set(ids)) == 2
    assert all(tool_use_id for tool_use_id in ids)


async def test_reasoning_from_compatible_servers_becomes_a_reasoning_block(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply(
            [
                chunk({"reasoning_content": "Think"}),
                chunk({"reasoning_content": "ing."}),
                chunk({"content": "Done."}),
                chunk({}, finish_reason="stop"),
            ]
        )
    )

    events = await collect(model)

    assert events[1:6] == [
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": "Think"}},
                "contentBlockIndex": 0,
            }
        },
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": "ing."}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "Done."}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
    ]


@pytest.mark.parametrize(
    ("finish_reason", "expected"),
    [
        ("stop", {"stopReason": "end_turn"}),
        ("length", {"stopReason": "max_tokens"}),
        ("content_filter", {"stopReason": "content_filtered"}),
        ("tool_calls", {"stopReason": "tool_use"}),
        (
            "eos_token",
            {
                "stopReason": "end_turn",
                "additionalModelResponseFields": {"finish_reason": "eos_token"},
            },
        ),
    ],
)
async def test_finish_reason_maps_to_stop_reason(
    server: FakeOpenAIServer, model: OpenAIModel, finish_reason: str, expected: Any
) -> None:
    server.reply(SSEReply([chunk({"content": "x"}), chunk({}, finish_reason=finish_reason)]))

    assert stop_reason(await collect(model)) == expected


async def test_tool_calls_mean_tool_use_even_when_the_server_says_stop(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_a", name="weather", arguments="{}")),
                chunk({}, finish_reason="stop"),
            ]
        )
    )

    assert stop_reason(await collect(model, tool_specs=[WEATHER])) == {"stopReason": "tool_use"}


async def test_usage_with_cached_tokens(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.reply(
        SSEReply(
            [chunk({"content": "x"}), chunk({}, "stop"), usage_chunk(100, 7, cached_tokens=64)]
        )
    )

    events = await collect(model)

    assert events[-1]["metadata"]["usage"] == {
        "inputTokens": 100,
        "outputTokens": 7,
        "totalTokens": 107,
        "cacheReadInputTokens": 64,
    }


@pytest.mark.parametrize(
    "extra",
    [
        # OpenRouter: writes beside the reads.
        {"prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 30}},
        # LiteLLM in front of a provider that bills cache writes.
        {"cache_read_input_tokens": 64, "cache_creation_input_tokens": 30},
    ],
)
async def test_usage_with_cache_writes_from_proxies(
    server: FakeOpenAIServer, model: OpenAIModel, extra: dict[str, Any]
) -> None:
    usage = usage_chunk(100, 7)
    usage["usage"].update(extra)
    server.reply(SSEReply([chunk({"content": "x"}), chunk({}, "stop"), usage]))

    [metadata] = [event["metadata"] for event in await collect(model) if "metadata" in event]

    assert metadata["usage"] == {
        "inputTokens": 100,
        "outputTokens": 7,
        "totalTokens": 107,
        "cacheReadInputTokens": 64,
        "cacheWriteInputTokens": 30,
    }


async def test_missing_usage_still_gives_metadata_with_zeros(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(SSEReply([chunk({"content": "x"}), chunk({}, "stop")]))

    events = await collect(model)

    assert events[-1]["metadata"]["usage"] == {
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
    }
    assert isinstance(events[-1]["metadata"]["metrics"]["latencyMs"], int)


# --- requests ----------------------------------------------------------------------------

PNG_BASE64 = "iVBORw0KGgo="

CONVERSATION: Messages = [
    {
        "role": "user",
        "content": [
            {"text": "What is in this picture, and the weather in Oslo?"},
            {"image": {"format": "png", "source": {"bytes": PNG_BASE64}}},
            {"cachePoint": {"type": "default"}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Need tools.", "signature": "s"}}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "call_a", "name": "weather", "input": {"city": "Oslo"}}},
            {"toolUse": {"toolUseId": "call_b", "name": "time", "input": {"city": "Oslo"}}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "call_a",
                    "status": "success",
                    "content": [{"text": "Sunny"}, {"json": {"celsius": 21}}],
                }
            },
            {
                "toolResult": {
                    "toolUseId": "call_b",
                    "status": "error",
                    "content": [{"text": "clock unavailable"}],
                }
            },
            {"text": "Thanks."},
        ],
    },
]


async def test_request_converts_the_conversation(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))

    await collect(model, CONVERSATION, tool_specs=[WEATHER, TIME], system_prompt="Be brief.")

    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    body = request.body
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tool_choice" not in body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture, and the weather in Oslo?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_BASE64}"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "time", "arguments": '{"city": "Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": 'Sunny\n{"celsius": 21}'},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: clock unavailable"},
        {"role": "user", "content": [{"type": "text", "text": "Thanks."}]},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": spec["name"],
                "description": spec["description"],
                "parameters": spec["inputSchema"]["json"],
            },
        }
        for spec in (WEATHER, TIME)
    ]


async def test_assistant_message_with_only_tool_calls_has_no_content(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))
    messages: Messages = [
        HELLO[0],
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "c1", "name": "time", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "c1", "status": "success", "content": []}}],
        },
    ]

    await collect(model, messages, tool_specs=[TIME])

    assert server.requests[0].body["messages"][1:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "time", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]


@pytest.mark.parametrize(
    ("system_prompt", "system_prompt_content", "expected"),
    [
        ("Be brief.", None, [{"role": "system", "content": "Be brief."}]),
        (
            None,
            [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}, {"text": "Be kind."}],
            [{"role": "system", "content": "Be brief.\nBe kind."}],
        ),
        # The host passes the same prompt both ways; the blocks win, nothing is sent twice.
        (
            "Be brief.\nBe kind.",
            [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}, {"text": "Be kind."}],
            [{"role": "system", "content": "Be brief.\nBe kind."}],
        ),
        (None, None, []),
        ("", None, []),
    ],
)
async def test_system_prompt_becomes_one_system_message(
    server: FakeOpenAIServer,
    model: OpenAIModel,
    system_prompt: str | None,
    system_prompt_content: Any,
    expected: list[dict[str, Any]],
) -> None:
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))

    await collect(model, system_prompt=system_prompt, system_prompt_content=system_prompt_content)

    assert server.requests[0].body["messages"] == [
        *expected,
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
    ]


@pytest.mark.parametrize(
    ("tool_choice", "expected"),
    [
        ({"auto": {}}, "auto"),
        ({"any": {}}, "required"),
        ({"tool": {"name": "weather"}}, {"type": "function", "function": {"name": "weather"}}),
    ],
)
async def test_tool_choice(
    server: FakeOpenAIServer, model: OpenAIModel, tool_choice: ToolChoice, expected: Any
) -> None:
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))

    await collect(model, tool_specs=[WEATHER], tool_choice=tool_choice)

    assert server.requests[0].body["tool_choice"] == expected


async def test_no_tools_means_no_tools_or_tool_choice_fields(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))

    await collect(model, tool_specs=[], tool_choice={"any": {}})

    assert "tools" not in server.requests[0].body
    assert "tool_choice" not in server.requests[0].body


async def test_params_go_into_every_request_and_unknown_kwargs_are_ignored(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    model = OpenAIModel(
        "test-model",
        client=client,
        params={"temperature": 0.25, "max_completion_tokens": 64, "extra_body": {"top_k": 5}},
    )
    server.reply(SSEReply([chunk({"content": "ok"}, "stop")]))

    await collect(model, model_state={"anything": 1}, invocation_state={})

    body = server.requests[0].body
    assert (body["temperature"], body["max_completion_tokens"], body["top_k"]) == (0.25, 64, 5)


async def test_unsupported_block_fails_before_any_request(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    bad: Message = {
        "role": "assistant",
        "content": [{"image": {"format": "png", "source": {"bytes": PNG_BASE64}}}],
    }

    with pytest.raises(ValueError, match=r"messages\[1\] \(assistant\): a 'image' block"):
        await collect(model, [HELLO[0], bad])
    assert server.requests == []


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "cause"),
    [
        (500, "Internal Server Error", openai.InternalServerError),
        (401, "Unauthorized", openai.AuthenticationError),
    ],
)
async def test_http_errors_become_model_errors(
    server: FakeOpenAIServer,
    model: OpenAIModel,
    status: int,
    reason: str,
    cause: type[openai.APIStatusError],
) -> None:
    server.reply(ErrorReply(status, {"error": {"message": "the server says no", "type": "x"}}))

    with pytest.raises(ModelError) as caught:
        await collect(model)

    error = caught.value
    assert str(error) == (
        f"model 'test-model' at {server.base_url}/: HTTP {status} {reason}: the server says no"
    )
    assert (error.model_id, error.status_code) == ("test-model", status)
    assert error.base_url == f"{server.base_url}/"
    assert isinstance(error.__cause__, cause)


async def test_error_event_in_the_stream_becomes_a_model_error(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply(
            [chunk({"content": "Hel"}), {"error": {"message": "overloaded", "type": "server"}}]
        )
    )
    events: list[StreamEvent] = []

    with pytest.raises(ModelError, match="error in the response stream: overloaded") as caught:
        await collect_into(events, model.stream(HELLO))

    assert caught.value.status_code is None
    assert isinstance(caught.value.__cause__, openai.APIError)
    # What arrived before the error was passed on; nothing pretends the message ended.
    assert [next(iter(event)) for event in events] == ["messageStart", "contentBlockDelta"]


async def test_unreachable_server_is_a_model_error(server: FakeOpenAIServer) -> None:
    base_url = server.base_url
    server.close()
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        model = OpenAIModel("test-model", client=client)
        with pytest.raises(ModelError, match="connection failed") as caught:
            await collect(model)
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)


async def test_tool_call_without_a_name_is_a_model_error(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply([chunk(tool_delta(0, id="call_a", arguments="{}")), chunk({}, "tool_calls")])
    )

    with pytest.raises(ModelError, match="malformed response stream: tool call 0 ended without"):
        await collect(model)


async def test_arguments_for_a_closed_tool_call_are_a_model_error(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    # Text closed the call's block while its input was incomplete; the rest cannot follow.
    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_a", name="weather", arguments='{"city": ')),
                chunk({"content": "Hmm."}),
                chunk(tool_delta(0, arguments='"Oslo"}')),
            ]
        )
    )

    with pytest.raises(ModelError, match="tool call 0 got more arguments after its block"):
        await collect(model, tool_specs=[WEATHER])


async def test_a_refusal_is_shown_as_text(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    server.reply(SSEReply([chunk({"refusal": "I can't help with that."}), chunk({}, "stop")]))

    assert assemble(await collect(model)) == ["I can't help with that."]


# --- the object --------------------------------------------------------------------------


async def test_is_a_model_with_a_model_id(model: OpenAIModel) -> None:
    assert isinstance(model, Model)
    assert model.model_id == "test-model"


async def test_stopping_early_releases_the_connection(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(
        SSEReply([chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, "stop")]),
        SSEReply([chunk({"content": "again"}), chunk({}, "stop")]),
    )

    stream = model.stream(HELLO)
    async for event in stream:
        if "contentBlockDelta" in event:
            break
    await stream.aclose()

    assert assemble(await collect(model)) == ["again"]


async def test_base_url_and_api_key_make_a_shared_client(server: FakeOpenAIServer) -> None:
    server.reply(SSEReply([chunk({"content": "hi"}, "stop")]))

    async with OpenAIModel("test-model", base_url=server.base_url, api_key="k") as model:
        assert assemble(await collect(model)) == ["hi"]
        assert repr(model) == f"OpenAIModel(model_id='test-model', base_url='{server.base_url}/')"
    # Shared with other models on this loop: closed when the loop ends, not by one model
    # (tests/host/test_openai_clients.py).
    assert not model.client.is_closed()
    assert server.requests[0].headers["authorization"] == "Bearer k"


async def test_aclose_leaves_a_passed_client_open(
    model: OpenAIModel, client: openai.AsyncOpenAI
) -> None:
    await model.aclose()

    assert not client.is_closed()


def test_client_and_base_url_are_exclusive() -> None:
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="test")
    with pytest.raises(ValueError, match="either client or base_url/api_key"):
        OpenAIModel("m", client=client, base_url="http://127.0.0.1:9/v1")


def test_params_may_not_override_what_the_adapter_sets() -> None:
    with pytest.raises(ValueError, match=r"params may not set \['messages', 'stream'\]"):
        OpenAIModel("m", api_key="test", params={"stream": False, "messages": []})


def test_import_without_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "stageware.openai",
        "stageware._host.models._openai",
        "stageware._host.models._openai_convert",
    ):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)

    with pytest.raises(
        ImportError, match=r"the `openai` extra: pip install -e '\.\[openai\]' in a clone"
    ):
        import stageware.openai  # noqa: F401
