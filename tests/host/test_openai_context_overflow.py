"""A conversation too long for the model is a ContextWindowOverflowError, whatever the server.

OpenAI-compatible servers refuse it with a 400 that says so in a code (OpenAI's
``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``) or only in words
(vLLM, OpenRouter, LiteLLM's proxy). Against the fake server on loopback, answering with
each server's own body; other 400s stay plain ``ModelError``s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from stageware import Agent, ContextWindowOverflowError, ModelError, ModelThrottledError
from stageware._generated.payloads import Messages
from stageware.openai import OpenAIModel

from .fake_openai_server import ErrorReply, FakeOpenAIServer

pytestmark = pytest.mark.anyio

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIModel]:
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=30.0
    ) as client:
        yield OpenAIModel("test-model", client=client)


async def failing_call(model: OpenAIModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async for _ in model.stream(HELLO):
            pass
    return caught.value


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, "
                    "your messages resulted in 130512 tokens. Please reduce the length of the "
                    "messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            id="OpenAI",
        ),
        pytest.param(
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
            id="llama.cpp server",
        ),
        pytest.param(
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you "
                "requested 5000 tokens (4000 in the messages, 1000 in the completion). Please "
                "reduce the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            id="vLLM, body without an error envelope",
        ),
        pytest.param(
            400,
            {
                "error": {
                    "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                    "this is a mock context window exceeded error",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "400",
                }
            },
            id="LiteLLM proxy",
        ),
        pytest.param(
            413,
            {"error": {"message": "Prompt is too long: 210000 tokens > 200000 maximum"}},
            id="413 in words",
        ),
        pytest.param(
            400,
            {
                "error": {
                    "message": "input length and `max_tokens` exceed context limit: "
                    "198000 + 4096 > 200000, decrease input length or `max_tokens` and try again"
                }
            },
            id="Anthropic's words through a proxy",
        ),
    ],
)
async def test_a_context_window_refusal_is_a_context_window_overflow_error(
    server: FakeOpenAIServer, model: OpenAIModel, status: int, body: dict[str, Any]
) -> None:
    server.reply(ErrorReply(status, body))

    error = await failing_call(model)

    assert isinstance(error, ContextWindowOverflowError)
    assert (error.model_id, error.base_url, error.status_code) == (
        "test-model",
        f"{server.base_url}/",
        status,
    )
    assert str(error).startswith(f"model 'test-model' at {server.base_url}/: HTTP {status} ")
    assert isinstance(error.__cause__, openai.BadRequestError | openai.APIStatusError)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(400, {"error": {"message": "Invalid value for 'temperature'"}}, id="400"),
        pytest.param(
            500,
            {"error": {"message": "maximum context length is 4096 tokens; worker crashed"}},
            id="a server error that mentions the context length",
        ),
    ],
)
async def test_other_errors_are_not_overflows(
    server: FakeOpenAIServer, model: OpenAIModel, status: int, body: dict[str, Any]
) -> None:
    server.reply(ErrorReply(status, body))

    error = await failing_call(model)

    assert type(error) is ModelError
    assert error.status_code == status


async def test_the_agent_is_not_retried_on_overflow_and_keeps_no_assistant_turn(
    server: FakeOpenAIServer, model: OpenAIModel
) -> None:
    body = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    server.reply(ErrorReply(400, body), ErrorReply(400, body))
    agent = Agent(model)

    result = await agent.invoke_async("Hi")

    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)
    assert not isinstance(result.error, ModelThrottledError)
    assert len(server.requests) == 1  # one request: the retry strategy retries throttling only
    assert [message["role"] for message in agent.messages] == ["user"]
