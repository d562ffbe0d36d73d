"""Every way an Anthropic call fails is a ModelError naming the model and the endpoint.

Against the fake server on loopback, on asyncio and trio: HTTP errors (throttling with
its wait, overload, a prompt too long, bad keys, server errors), an error event in the
middle of a stream, streams cut short or reset, bodies that are not a stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import pytest

from stageware import ContextWindowOverflowError, ModelError, ModelThrottledError
from stageware._generated.payloads import Messages, StreamEvent
from stageware.anthropic import AnthropicModel

from .fake_anthropic_server import (
    ErrorReply,
    FakeAnthropicServer,
    HangReply,
    RawReply,
    ResetReply,
    SSEReply,
    error_body,
    message,
    text_block,
)

pytestmark = pytest.mark.anyio

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def client(server: FakeAnthropicServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=30.0
    ) as client:
        yield client


@pytest.fixture
def model(client: anthropic.AsyncAnthropic) -> AnthropicModel:
    return AnthropicModel("claude-test", client=client)


async def collect(model: AnthropicModel, received: list[StreamEvent] | None = None) -> None:
    async for event in model.stream(HELLO):
        if received is not None:
            received.append(event)


async def failure(model: AnthropicModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await collect(model)
    return caught.value


def assert_names_the_call(error: ModelError, server: FakeAnthropicServer) -> None:
    assert error.model_id == "claude-test"
    assert error.base_url == server.base_url
    assert str(error).startswith(f"model 'claude-test' at {server.base_url}")


async def test_429_is_throttling_with_the_servers_wait(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(
        ErrorReply(
            429,
            error_body("rate_limit_error", "Number of requests has exceeded your rate limit"),
            {"retry-after": "7", "request-id": "req_1"},
        )
    )

    error = await failure(model)

    assert isinstance(error, ModelThrottledError)
    assert error.retry_after == 7
    assert error.status_code == 429
    assert "HTTP 429" in str(error)
    assert "exceeded your rate limit" in str(error)
    assert "request id req_1" in str(error)
    assert_names_the_call(error, server)


async def test_a_spent_limit_is_not_throttling(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    body = error_body("rate_limit_error", "Your spend limit is reached.")
    body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
    server.reply(ErrorReply(429, body, {"retry-after": "60"}))

    error = await failure(model)

    assert type(error) is ModelError
    assert error.status_code == 429


async def test_529_overloaded_is_throttling(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(ErrorReply(529, error_body("overloaded_error", "Overloaded")))

    error = await failure(model)

    assert isinstance(error, ModelThrottledError)
    assert (error.status_code, error.retry_after) == (529, None)
    assert "Overloaded" in str(error)


async def test_an_overloaded_event_mid_stream_is_throttling_after_the_text_so_far(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    events = message(text_block("partial answer"), stop=False)[:4]
    events.append(error_body("overloaded_error", "Overloaded"))
    server.reply(SSEReply(events))
    received: list[StreamEvent] = []

    with pytest.raises(ModelThrottledError) as caught:
        await collect(model, received)

    assert received[-1]["contentBlockDelta"]["delta"] == {"text": "partial"}
    assert caught.value.status_code is None
    assert "error event in the response stream (overloaded_error): Overloaded" in str(caught.value)


async def test_another_error_event_mid_stream_is_a_model_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    events = message(text_block("partial"), stop=False)[:3]
    events.append(error_body("api_error", "Internal server error"))
    server.reply(SSEReply(events))

    error = await failure(model)

    assert type(error) is ModelError
    assert "(api_error): Internal server error" in str(error)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("prompt is too long: 210000 tokens > 200000 maximum", id="prompt too long"),
        pytest.param(
            "input length and `max_tokens` exceed context limit: 198000 + 4096 > 200000, "
            "decrease input length or `max_tokens` and try again",
            id="input and max_tokens exceed the limit",
        ),
    ],
)
async def test_a_prompt_too_long_is_a_context_window_overflow(
    model: AnthropicModel, server: FakeAnthropicServer, text: str
) -> None:
    server.reply(ErrorReply(400, error_body("invalid_request_error", text)))

    error = await failure(model)

    assert isinstance(error, ContextWindowOverflowError)
    assert error.status_code == 400
    assert text in str(error)


async def test_another_bad_request_is_a_plain_model_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(ErrorReply(400, error_body("invalid_request_error", "max_tokens: too large")))

    error = await failure(model)

    assert type(error) is ModelError
    assert "HTTP 400 Bad Request: max_tokens: too large" in str(error)


async def test_a_stop_at_the_end_of_the_context_window_is_an_overflow(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(SSEReply(message(text_block("cut"), stop_reason="model_context_window_exceeded")))

    error = await failure(model)

    assert isinstance(error, ContextWindowOverflowError)
    assert "model_context_window_exceeded" in str(error)


@pytest.mark.parametrize(
    ("status", "error_type", "text"),
    [
        (401, "authentication_error", "invalid x-api-key"),
        (403, "permission_error", "not allowed"),
        (404, "not_found_error", "model: claude-nope"),
        (500, "api_error", "Internal server error"),
    ],
)
async def test_other_http_errors_are_model_errors_with_their_status(
    model: AnthropicModel,
    server: FakeAnthropicServer,
    status: int,
    error_type: str,
    text: str,
) -> None:
    server.reply(ErrorReply(status, error_body(error_type, text)))

    error = await failure(model)

    assert type(error) is ModelError
    assert error.status_code == status
    assert f"HTTP {status}" in str(error)
    assert text in str(error)
    assert "test-key" not in str(error)
    assert_names_the_call(error, server)


async def test_a_stream_without_message_stop_is_an_error_not_an_answer(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(SSEReply(message(text_block("Looks complete"), stop=False)))

    error = await failure(model)

    assert "ended without message_stop" in str(error)
    assert_names_the_call(error, server)


async def test_an_empty_stream_is_an_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(SSEReply([]))

    error = await failure(model)

    assert "ended before message_start" in str(error)


async def test_a_connection_reset_mid_stream_is_a_model_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(ResetReply(message(text_block("partial"), stop=False)[:4]))

    error = await failure(model)

    assert error.status_code is None
    assert_names_the_call(error, server)


async def test_a_stream_that_stalls_past_the_read_timeout_is_a_model_error(
    server: FakeAnthropicServer,
) -> None:
    reply = HangReply(message(text_block("partial"), stop=False)[:4], interval=2.0)
    server.reply(reply)
    async with anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="k", max_retries=0, timeout=0.3
    ) as client:
        error = await failure(AnthropicModel("claude-test", client=client))

    assert "timed out reading the response" in str(error)
    assert_names_the_call(error, server)


async def test_a_connection_reset_before_the_answer_is_a_connection_failure(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(ResetReply(before_headers=True))

    error = await failure(model)

    assert "connection failed" in str(error)


async def test_a_refused_connection_names_the_endpoint() -> None:
    model = AnthropicModel("claude-test", base_url="http://127.0.0.1:9", api_key="k")

    error = await failure(model)

    assert "connection failed" in str(error)
    assert error.base_url == "http://127.0.0.1:9"


async def test_a_non_streaming_json_body_is_an_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    body = json.dumps({"type": "message", "content": [{"type": "text", "text": "hi"}]})
    server.reply(RawReply(body.encode(), "application/json"))

    error = await failure(model)

    assert "non-streaming body (application/json)" in str(error)
    assert '"type": "message"' in str(error)


async def test_a_body_that_is_not_sse_is_an_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(RawReply(b"<html>502 Bad Gateway</html>", "text/html"))

    error = await failure(model)

    assert "non-streaming body (text/html)" in str(error)
    assert "<html>502 Bad Gateway</html>" in str(error)


async def test_an_event_whose_data_is_not_json_is_an_error(
    model: AnthropicModel, server: FakeAnthropicServer
) -> None:
    server.reply(RawReply(b"event: message_start\ndata: {not json\n\n"))

    error = await failure(model)

    assert "malformed response stream" in str(error)
    assert "not JSON" in str(error)


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param(
            [{"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}],
            "before message_start",
            id="a block before the message",
        ),
        pytest.param(
            [
                *message(stop=False)[:2],
                {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta"}},
            ],
            "block 3, which is not open",
            id="a delta for a block never started",
        ),
        pytest.param(
            [
                *message(stop=False)[:2],
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "server_tool_use", "id": "s", "name": "web"},
                },
            ],
            "a 'server_tool_use' content block, which this adapter does not support",
            id="a server tool block",
        ),
        pytest.param(
            [*message(stop=False)[:2], {"type": "message_start_v2"}],
            "an unknown event type 'message_start_v2'",
            id="an unknown event",
        ),
    ],
)
async def test_a_stream_that_breaks_the_protocol_is_a_model_error(
    model: AnthropicModel,
    server: FakeAnthropicServer,
    events: list[dict[str, Any]],
    expected: str,
) -> None:
    server.reply(SSEReply(events))

    error = await failure(model)

    assert "malformed response stream" in str(error)
    assert expected in str(error)


async def test_a_password_in_the_endpoint_never_reaches_an_error(
    server: FakeAnthropicServer,
) -> None:
    url = server.base_url.replace("http://", "http://team:hunter2@")
    model = AnthropicModel("claude-test", base_url=url, api_key="k")
    server.reply(ErrorReply(500, error_body("api_error", f"proxy at {url} failed")))

    error = await failure(model)

    assert "hunter2" not in str(error)
    assert error.base_url == server.base_url.replace("http://", "http://team:***@")
    # Sent as basic auth, not in the URL.
    assert server.requests[0].headers["authorization"].startswith("Basic ")


async def test_params_that_are_not_json_data_are_a_model_error_before_any_request(
    server: FakeAnthropicServer, client: anthropic.AsyncAnthropic
) -> None:
    opaque = {"user_id": object()}
    model = AnthropicModel("claude-test", client=client, params={"metadata": opaque})

    error = await failure(model)

    assert "could not prepare the request: TypeError" in str(error)
    assert server.requests == []


async def test_a_client_that_cannot_be_built_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    model = AnthropicModel("claude-test", base_url="http://127.0.0.1:9")

    error = await failure(model)

    assert_names_the_call_without_server(error)


def assert_names_the_call_without_server(error: ModelError) -> None:
    assert error.model_id == "claude-test"
    assert str(error).startswith("model 'claude-test' at http://127.0.0.1:9")
