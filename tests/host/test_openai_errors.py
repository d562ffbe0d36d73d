"""OpenAIModel never passes off a broken response as a whole one, and never shows a password.

Against the fake server on loopback, which can also answer as a broken server does: a
stream cut short, a body that is not a stream, an event that is not JSON, a reset
connection, throttling.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
from collections.abc import AsyncIterator, Iterator
from email.utils import format_datetime
from pathlib import Path

import openai
import pytest

from stageware import Agent, ModelError, ModelThrottledError
from stageware._generated.payloads import Messages, StreamEvent, ToolSpec
from stageware._host.models import _loop_clients
from stageware.openai import OpenAIModel

from .fake_openai_server import (
    ErrorReply,
    FakeOpenAIServer,
    RawReply,
    Reply,
    ResetReply,
    SSEReply,
    chunk,
    usage_chunk,
)

pytestmark = pytest.mark.anyio

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]

COMPLETION = {
    "id": "chatcmpl-test",
    "object": "chat.completion",
    "created": 0,
    "model": "test-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello!"},
            "finish_reason": "stop",
        }
    ],
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIModel]:
    # No retries inside the client: each scripted reply is seen by the adapter.
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=30.0
    ) as client:
        yield OpenAIModel("test-model", client=client)


async def failing_call(model: OpenAIModel) -> tuple[ModelError, list[StreamEvent]]:
    """The error the call ends with, and the events that arrived before it."""
    events: list[StreamEvent] = []
    with pytest.raises(ModelError) as caught:
        await collect_into(events, model.stream(HELLO))
    return caught.value, events


async def collect_into(events: list[StreamEvent], stream: AsyncIterator[StreamEvent]) -> None:
    async for event in stream:
        events.append(event)


# --- a cut-short response is an error, never an end_turn ---------------------------------


@pytest.mark.parametrize(
    ("reply", "what"),
    [
        pytest.param(
            SSEReply([chunk({"content": "Hel"})]),
            "the response stream ended without a finish reason, so the answer may be cut short",
            id="no finish reason",
        ),
        pytest.param(
            SSEReply([usage_chunk(5, 0)]),
            "the response had no choices: none of its 1 chunk(s) carried one",
            id="empty choices",
        ),
        pytest.param(
            SSEReply([]),
            "the response stream ended before its first chunk",
            id="no chunks",
        ),
        pytest.param(
            RawReply(json.dumps(COMPLETION).encode(), "application/json"),
            "the server sent a non-streaming body (application/json) in answer to a "
            'streaming request: \'{"id": "chatcmpl-test"',
            id="non-streaming body",
        ),
        pytest.param(
            RawReply(b'data: {"id": "chatcmpl-test", "choices": [\n\n'),
            "malformed response stream: an event's data is not JSON (Expecting value, at "
            'character 36): \'{"id": "chatcmpl-test", "choices": [\'',
            id="malformed SSE JSON",
        ),
        pytest.param(
            SSEReply([{"id": "chatcmpl-test", "object": "chat.completion.chunk"}]),
            "malformed response stream: a chunk that is not a chat.completion.chunk "
            "(TypeError: 'NoneType' object is not iterable): ChatCompletionChunk(",
            id="JSON that is not a chunk",
        ),
        # The transport's own wording differs between asyncio and trio; the type of the
        # error and the OS error under it are there on both.
        pytest.param(
            ResetReply([chunk({"content": "Hel"})]), "connection failed: ReadError", id="reset"
        ),
        pytest.param(
            ResetReply(before_headers=True),
            "connection failed: ReadError",
            id="reset before the response",
        ),
    ],
)
async def test_a_cut_short_response_is_a_model_error_naming_model_endpoint_and_cause(
    server: FakeOpenAIServer, model: OpenAIModel, reply: Reply, what: str
) -> None:
    server.reply(reply)

    error, events = await failing_call(model)

    assert str(error).startswith(f"model 'test-model' at {server.base_url}/: {what}")
    if isinstance(reply, ResetReply):
        assert str(error).endswith(
            ", caused by ConnectionResetError: [Errno 104] Connection reset by peer"
        )
    assert (error.model_id, error.base_url) == ("test-model", f"{server.base_url}/")
    assert not isinstance(error, ModelThrottledError)
    # Nothing that arrived claims the message ended.
    assert not any("messageStop" in event for event in events)


async def test_a_cut_short_response_fails_the_agent_and_leaves_no_assistant_turn(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    server.reply(SSEReply([chunk({"content": "Half an ans"})]))
    agent = Agent(model)

    with pytest.raises(ModelError, match="without a finish reason"):
        await agent.invoke_async("Hi")

    assert [message["role"] for message in agent.messages] == ["user"]


# --- throttling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        pytest.param({"retry-after": "7"}, 7.0, id="seconds"),
        pytest.param({"retry-after": "0.5"}, 0.5, id="fractional seconds"),
        pytest.param({"retry-after-ms": "1500", "retry-after": "9"}, 1.5, id="OpenAI's ms"),
        pytest.param({}, None, id="none"),
        pytest.param({"retry-after": "soon"}, None, id="unreadable"),
    ],
)
async def test_429_is_a_throttled_error_with_the_servers_retry_after(
    server: FakeOpenAIServer,
    model: OpenAIModel,
    headers: dict[str, str],
    retry_after: float | None,
) -> None:
    body = {"error": {"message": "Rate limit reached", "type": "requests"}}
    server.reply(ErrorReply(429, body, headers))

    error, _ = await failing_call(model)

    assert isinstance(error, ModelThrottledError)
    assert error.retry_after == retry_after
    assert error.status_code == 429
    assert str(error) == (
        f"model 'test-model' at {server.base_url}/: HTTP 429 Too Many Requests: Rate limit reached"
    )


async def test_retry_after_as_an_http_date(server: FakeOpenAIServer, model: OpenAIModel) -> None:
    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
    body = {"error": {"message": "slow down"}}
    server.reply(ErrorReply(429, body, {"retry-after": format_datetime(when, usegmt=True)}))

    error, _ = await failing_call(model)

    assert isinstance(error, ModelThrottledError)
    assert error.retry_after is not None
    # The date has whole seconds; the test takes a moment.
    assert 25 <= error.retry_after <= 30


async def test_an_exhausted_quota_is_not_throttling(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    # OpenAI sends 429 for this too, but waiting will not bring the quota back.
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server.reply(ErrorReply(429, body, {"retry-after": "1"}))

    error, _ = await failing_call(model)

    assert type(error) is ModelError
    assert error.status_code == 429


async def test_529_overloaded_is_a_throttled_error(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    # Anthropic's "overloaded", as a proxy in front of it (LiteLLM's) passes it on.
    body = {"error": {"message": "Overloaded", "type": "overloaded_error"}}
    server.reply(ErrorReply(529, body, {"retry-after": "2"}))

    error, _ = await failing_call(model)

    assert isinstance(error, ModelThrottledError)
    assert (error.status_code, error.retry_after) == (529, 2.0)


# --- a password in base_url --------------------------------------------------------------

PASSWORD = "hunter2-secret"


def with_credentials(base_url: str) -> str:
    return base_url.replace("http://", f"http://alice:{PASSWORD}@")


async def test_a_password_in_base_url_reaches_the_server_and_nothing_else(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The client's own retries take the first three 429s (1 ms apart, as asked); the
    # agent retries after that, and logs it.
    throttled = ErrorReply(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1"})
    server.reply(
        throttled,
        throttled,
        throttled,
        SSEReply([chunk({"content": "Hi"}), chunk({}, "stop")]),
        ErrorReply(400, {"error": {"message": "bad request"}}),
    )
    caplog.set_level(logging.DEBUG)  # every logger: openai's, httpx's and the host's
    async with OpenAIModel(
        "test-model", base_url=with_credentials(server.base_url), api_key="k"
    ) as model:
        agent = Agent(model)
        result = await agent.invoke_async("Hi")
        with pytest.raises(ModelError) as caught:
            await agent.invoke_async("Again")

    assert result.text == "Hi"
    error = caught.value
    assert (
        str(error) == f"model 'test-model' at {server.base_url}/: HTTP 400 Bad Request: bad request"
    )
    assert "HTTP Request: POST" in caplog.text  # httpx logged every request URL
    assert "model call throttled" in caplog.text
    for shown in (str(error), repr(error), error.base_url, repr(model), caplog.text):
        assert PASSWORD not in str(shown)
    # The credentials still went to the server, as the basic auth httpx makes of them.
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert {request.headers["authorization"] for request in server.requests} == {basic}


async def test_a_password_in_a_passed_clients_url_is_redacted(server: FakeOpenAIServer) -> None:
    server.reply(ErrorReply(400, {"error": {"message": "bad request"}}))
    async with openai.AsyncOpenAI(
        base_url=with_credentials(server.base_url), api_key="k", max_retries=0
    ) as client:
        model = OpenAIModel("test-model", client=client)

        error, _ = await failing_call(model)

    redacted = server.base_url.replace("http://", "http://alice:***@") + "/"
    assert error.base_url == redacted
    assert str(error).startswith(f"model 'test-model' at {redacted}: HTTP 400")
    assert repr(model) == f"OpenAIModel(model_id='test-model', base_url='{redacted}')"


async def test_a_tool_spec_that_is_not_json_data_is_a_model_error_before_any_request(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    spec: ToolSpec = {
        "name": "weather",
        "description": "The weather.",
        "inputSchema": {"json": {"type": "object", "maximum": float("nan")}},
    }

    with pytest.raises(ModelError) as caught:
        await collect_into([], model.stream(HELLO, [spec]))

    assert str(caught.value).startswith(
        f"model 'test-model' at {server.base_url}/: could not prepare the request: "
        "ValueError: request field 'tools' is not JSON data"
    )
    assert server.requests == []


async def test_a_shared_client_that_cannot_be_built_is_a_model_error_naming_why(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SSL context every adapter shares is built with the first client and kept; with
    # none built yet, this model's client (the first with its key) builds it, from a
    # certificate file that is not there.
    monkeypatch.setattr(_loop_clients, "_ssl_context", None)
    monkeypatch.setenv("SSL_CERT_FILE", str(Path(__file__).parent / "no-such-file.pem"))
    model = OpenAIModel("test-model", base_url=server.base_url, api_key="unbuildable")

    error, _ = await failing_call(model)

    assert str(error).startswith(
        f"model 'test-model' at {server.base_url}/: could not prepare the request: "
        "FileNotFoundError"
    )
    assert (error.model_id, error.base_url) == ("test-model", f"{server.base_url}/")
