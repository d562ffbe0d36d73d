"""AnthropicModel against a fake Messages API server on loopback, on asyncio and trio.

The real ``anthropic`` client talks HTTP and SSE to ``FakeAnthropicServer``; the tests
check the Converse events the adapter yields and the request bodies the server received.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import anyio
import httpx2
import pydantic
import pytest

from stageware import Model, OutputSchema
from stageware._generated.payloads import Messages, StreamEvent, ToolSpec
from stageware._host.models._streaming import collect_response
from stageware.anthropic import AnthropicModel

from .fake_anthropic_server import (
    FakeAnthropicServer,
    HangReply,
    SSEReply,
    message,
    text_block,
    thinking_block,
    tool_block,
)

pytestmark = pytest.mark.anyio

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]

WEATHER: ToolSpec = {
    "name": "weather",
    "description": "The weather in a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def client(server: FakeAnthropicServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    # No retries, so error tests fail fast; a timeout, so a broken test fails, not hangs.
    async with anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=30.0
    ) as client:
        yield client


@pytest.fixture
def model(client: anthropic.AsyncAnthropic) -> AnthropicModel:
    return AnthropicModel("claude-test", client=client)


async def collect(
    model: AnthropicModel, messages: Messages = HELLO, **kwargs: Any
) -> list[StreamEvent]:
    return [event async for event in model.stream(messages, **kwargs)]


async def events_of(events: list[StreamEvent]) -> AsyncIterator[StreamEvent]:
    for event in events:
        yield event


async def test_it_is_a_model_and_streams_text(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(SSEReply(message(text_block("Hello there"))))

    events = await collect(model, system_prompt="Be brief.")

    assert isinstance(model, Model)
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e] == [
        {"text": "Hello"},
        {"text": " there"},
    ]
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    body = server.requests[0].body
    assert body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "system": "Be brief.",
        "stream": True,
    }
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_a_tool_call_streams_as_a_tool_use_block(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(
        SSEReply(
            message(
                text_block("Checking."),
                tool_block("toolu_1", "weather", {"city": "Oslo"}),
                stop_reason="tool_use",
            )
        )
    )

    events = await collect(model, tool_specs=[WEATHER], tool_choice={"any": {}})
    response = await collect_response(events_of(events))

    assert response.stop_reason == "tool_use"
    assert response.message["content"] == [
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}},
    ]
    body = server.requests[0].body
    assert body["tools"] == [
        {
            "name": "weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER["inputSchema"]["json"],
        }
    ]
    assert body["tool_choice"] == {"type": "any"}


async def test_cache_tools_marks_the_last_tool_and_leaves_the_specs_alone(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    model = AnthropicModel("claude-test", client=client, cache_tools=True)
    other: ToolSpec = {**WEATHER, "name": "time"}
    specs = [WEATHER, other]
    server.reply(SSEReply(message(text_block("ok"))))

    await collect(model, tool_specs=specs)

    tools = server.requests[0].body["tools"]
    assert [("cache_control" in tool_, tool_["name"]) for tool_ in tools] == [
        (False, "weather"),
        (True, "time"),
    ]
    assert specs == [WEATHER, other]
    assert "cache_control" not in WEATHER["inputSchema"]["json"]


async def test_no_tools_means_no_tool_choice_either(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(SSEReply(message(text_block("ok"))))

    await collect(model, tool_specs=[], tool_choice={"auto": {}})

    assert "tools" not in server.requests[0].body
    assert "tool_choice" not in server.requests[0].body


async def test_usage_carries_the_prompt_cache_reads_and_writes(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(
        SSEReply(
            message(
                text_block("ok"), input_tokens=12, output_tokens=3, cache_read=100, cache_write=50
            )
        )
    )

    events = await collect(model)

    metadata = events[-1]["metadata"]
    assert metadata["usage"] == {
        "inputTokens": 12,
        "outputTokens": 3,
        "totalTokens": 165,
        "cacheReadInputTokens": 100,
        "cacheWriteInputTokens": 50,
    }
    assert metadata["metrics"]["latencyMs"] >= 0


async def test_thinking_streams_as_reasoning_with_its_signature(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    model = AnthropicModel("claude-test", client=client, params={"thinking": thinking})
    server.reply(SSEReply(message(thinking_block("Let me think.", "sig-1"), text_block("42"))))

    response = await collect_response(model.stream(HELLO))

    assert response.message["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Let me think.", "signature": "sig-1"}}},
        {"text": "42"},
    ]
    assert server.requests[0].body["thinking"] == thinking


async def test_redacted_thinking_streams_as_redacted_reasoning(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    redacted: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "content_block": {"type": "redacted_thinking", "data": "xyz"},
        },
        {"type": "content_block_stop"},
    ]
    server.reply(SSEReply(message(redacted, text_block("done"))))

    response = await collect_response(model.stream(HELLO))

    assert response.message["content"][0] == {"reasoningContent": {"redactedContent": "xyz"}}


@pytest.mark.parametrize(
    ("anthropic_reason", "converse"),
    [
        ("end_turn", {"stopReason": "end_turn"}),
        ("max_tokens", {"stopReason": "max_tokens"}),
        ("stop_sequence", {"stopReason": "stop_sequence"}),
        (
            "refusal",
            {
                "stopReason": "content_filtered",
                "additionalModelResponseFields": {"stop_reason": "refusal"},
            },
        ),
        (
            "pause_turn",
            {
                "stopReason": "end_turn",
                "additionalModelResponseFields": {"stop_reason": "pause_turn"},
            },
        ),
        (
            "a_reason_from_a_newer_api",
            {
                "stopReason": "end_turn",
                "additionalModelResponseFields": {"stop_reason": "a_reason_from_a_newer_api"},
            },
        ),
    ],
)
async def test_stop_reasons_are_mapped(
    model: AnthropicModel,
    server: FakeAnthropicServer,
    anthropic_reason: str,
    converse: dict[str, Any],
) -> None:
    server.reply(SSEReply(message(text_block("x"), stop_reason=anthropic_reason)))

    events = await collect(model)

    assert events[-2] == {"messageStop": converse}


async def test_a_refusal_keeps_its_details(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    events = message(text_block("I can't help with that."), stop_reason="refusal")
    details = {"type": "refusal", "category": "cyber", "explanation": "Malware."}
    events[-2]["delta"]["stop_details"] = details
    server.reply(SSEReply(events))

    converted = await collect(model)

    assert converted[-2]["messageStop"] == {
        "stopReason": "content_filtered",
        "additionalModelResponseFields": {"stop_reason": "refusal", "stop_details": details},
    }


async def test_params_and_max_tokens_reach_the_request(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    model = AnthropicModel(
        "claude-test",
        client=client,
        max_tokens=256,
        params={
            "stop_sequences": ["END"],
            "extra_body": {"temperature": 0.2},
            "extra_headers": {"x-team": "blue"},
        },
    )
    server.reply(SSEReply(message(text_block("ok"))))

    await collect(model)

    request = server.requests[0]
    assert request.body["max_tokens"] == 256
    assert request.body["stop_sequences"] == ["END"]
    assert request.body["temperature"] == 0.2
    assert request.headers["x-team"] == "blue"


def test_bad_options_are_refused_when_the_model_is_built() -> None:
    with pytest.raises(ValueError, match=r"params may not set \['messages'\]"):
        AnthropicModel("m", params={"messages": []})
    with pytest.raises(ValueError, match=r"params has \['temprature'\].*extra_body"):
        AnthropicModel("m", params={"temprature": 1})
    with pytest.raises(ValueError, match="either client or base_url/api_key"):
        AnthropicModel("m", client=anthropic.AsyncAnthropic(api_key="k"), api_key="k")
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        AnthropicModel("m", max_tokens=0)


class Answer(pydantic.BaseModel):
    """The answer and how sure the model is."""

    answer: str
    confidence: float


async def test_a_structured_run_asks_for_the_schema_natively(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    schema = OutputSchema.of(Answer)
    server.reply(SSEReply(message(text_block('{"answer": "42", "confidence": 0.9}'))))

    response = await collect_response(model.stream(HELLO, output_schema=schema))

    assert model.supports_structured_output
    assert schema.validate_json(response.message["content"][0]["text"]) == Answer(
        answer="42", confidence=0.9
    )
    output_format = server.requests[0].body["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    assert output_format["schema"]["properties"].keys() == {"answer", "confidence"}
    assert output_format["schema"]["additionalProperties"] is False


async def test_the_native_format_joins_output_config_given_in_params(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    model = AnthropicModel(
        "claude-test", client=client, params={"output_config": {"effort": "low"}}
    )
    server.reply(SSEReply(message(text_block("{}"))))

    await collect(model, output_schema=OutputSchema.of(Answer))

    config = server.requests[0].body["output_config"]
    assert config["effort"] == "low"
    assert config["format"]["type"] == "json_schema"
    assert model.params["output_config"] == {"effort": "low"}


async def test_the_tool_mode_never_sends_a_format(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    model = AnthropicModel("claude-test", client=client, structured_output="tool")
    server.reply(SSEReply(message(text_block("ok"))))

    await collect(model, output_schema=OutputSchema.of(Answer))

    assert not model.supports_structured_output
    assert "output_config" not in server.requests[0].body


@pytest.mark.parametrize(
    ("thinking", "sent"),
    [
        pytest.param({"type": "enabled", "budget_tokens": 1024}, "auto", id="thinking"),
        pytest.param({"type": "disabled"}, "tool", id="thinking disabled"),
        pytest.param(None, "tool", id="no thinking"),
    ],
)
async def test_a_forced_tool_with_thinking_on_is_sent_as_auto(
    server: FakeAnthropicServer,
    client: anthropic.AsyncAnthropic,
    thinking: dict[str, Any] | None,
    sent: str,
) -> None:
    params = {} if thinking is None else {"thinking": thinking}
    model = AnthropicModel("claude-test", client=client, params=params)
    server.reply(SSEReply(message(text_block("ok"))), SSEReply(message(text_block("ok"))))

    await collect(model, tool_specs=[WEATHER], tool_choice={"tool": {"name": "weather"}})
    await collect(model, tool_specs=[WEATHER], tool_choice={"any": {}})

    first, second = (request.body["tool_choice"] for request in server.requests)
    assert first == ({"type": "tool", "name": "weather"} if sent == "tool" else {"type": "auto"})
    assert second == {"type": "any" if sent == "tool" else "auto"}


async def test_cancelling_mid_stream_closes_the_connection(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    reply = HangReply(message(text_block("partial"), stop=False)[:4])
    server.reply(reply)
    received: list[StreamEvent] = []

    with anyio.move_on_after(0.5) as scope:
        async for event in model.stream(HELLO):
            received.append(event)

    assert scope.cancelled_caught
    assert {"contentBlockDelta": {"delta": {"text": "par"}, "contentBlockIndex": 0}} in received
    # The server notices the hang-up when its next ping cannot be written.
    with anyio.fail_after(20):  # generous: a loaded CI machine is slow, a bug never ends
        while not reply.disconnected.is_set():
            await anyio.sleep(0.01)


async def test_closing_the_stream_early_closes_the_connection(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    reply = HangReply(message(text_block("partial"), stop=False)[:4])
    server.reply(reply)

    stream = model.stream(HELLO)
    assert await anext(stream) == {"messageStart": {"role": "assistant"}}
    await stream.aclose()

    with anyio.fail_after(20):  # generous: a loaded CI machine is slow, a bug never ends
        while not reply.disconnected.is_set():
            await anyio.sleep(0.01)


async def test_a_model_without_a_client_builds_one_per_loop_that_sends_the_key(
    server: FakeAnthropicServer,
) -> None:
    model = AnthropicModel("claude-test", base_url=server.base_url, api_key="sk-own")
    server.reply(SSEReply(message(text_block("one"))), SSEReply(message(text_block("two"))))

    await collect(model)
    await collect(model)

    assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-own"] * 2


def test_repr_shows_the_endpoint_without_its_password_and_never_the_key() -> None:
    model = AnthropicModel(
        "claude-test", base_url="https://team:hunter2@proxy.example/", api_key="sk-secret"
    )

    shown = repr(model)

    assert (
        shown
        == "AnthropicModel(model_id='claude-test', base_url='https://team:***@proxy.example/')"
    )
    assert "sk-secret" not in shown


def test_without_a_base_url_the_endpoint_is_the_environments_or_anthropics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert "base_url='https://api.anthropic.com'" in repr(AnthropicModel("m", api_key="k"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.internal:8080")
    assert "base_url='http://gateway.internal:8080'" in repr(AnthropicModel("m", api_key="k"))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_built_client_serves_its_loop_and_is_closed_when_the_loop_ends(
    server: FakeAnthropicServer, backend: str
) -> None:
    model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k")
    server.reply(*(SSEReply(message(text_block(str(n)))) for n in range(3)))
    clients: list[anthropic.AsyncAnthropic] = []

    async def two_calls() -> None:
        for _ in range(2):
            await collect(model)
            clients.append(model._clients.for_running_loop())  # pyright: ignore[reportPrivateUsage]

    anyio.run(two_calls, backend=backend)
    anyio.run(collect, model, backend=backend)

    first, again = clients
    assert first is again
    assert first.is_closed()
    assert len(server.requests) == 3


def test_openai_and_anthropic_clients_share_one_ssl_context(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading the CA certificates is nearly all of a client's cost: one context for all.
    from stageware._host.models import _loop_clients
    from stageware.openai import OpenAIModel

    built: list[object] = []
    create = httpx2.create_ssl_context

    def counted() -> ssl.SSLContext:
        context = create()
        built.append(context)
        return context

    monkeypatch.setattr(_loop_clients, "_ssl_context", None)
    monkeypatch.setattr(httpx2, "create_ssl_context", counted)
    anthropic_model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k")
    # A key no other test uses: a client the shared OpenAI clients must build now.
    openai_model = OpenAIModel("gpt-test", base_url=server.base_url, api_key="k-ssl-context")
    server.reply(SSEReply(message(text_block("ok"))))

    async def use_both() -> None:
        await collect(anthropic_model)
        assert openai_model.client is not None

    anyio.run(use_both)

    assert len(built) == 1
