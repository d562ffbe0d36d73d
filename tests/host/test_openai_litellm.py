"""OpenAIModel through the LiteLLM proxy: a real third-party OpenAI-compatible server.

The proxy runs as a subprocess on loopback (``conftest.litellm_proxy``, once per session)
with models that answer with LiteLLM's own mock responses, and one forwarded to a fake
provider on loopback (for tool calls, which LiteLLM's mocks cannot stream), so nothing
leaves the machine. The model streams from ``/v1/chat/completions`` as it would from a
proxy in front of any provider; the proxy's own errors (throttling, a context window
exceeded, an overloaded or failed upstream, a wrong key) arrive as it sends them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest

from stageware import (
    Agent,
    ContextWindowOverflowError,
    InvokeModelStage,
    ModelError,
    ModelThrottledError,
    tool,
)
from stageware.middleware import ModelFallback
from stageware.openai import OpenAIModel

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk, tool_delta, usage_chunk
from .litellm_proxy import LiteLLMProxy

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(litellm_proxy: LiteLLMProxy) -> AsyncIterator[openai.AsyncOpenAI]:
    # No retries inside the client: each answer of the proxy reaches the adapter.
    async with openai.AsyncOpenAI(
        base_url=f"{litellm_proxy.base_url}/v1", api_key=litellm_proxy.api_key, max_retries=0
    ) as client:
        yield client


async def test_an_agent_streams_text_and_usage_through_the_proxy(
    client: openai.AsyncOpenAI,
) -> None:
    agent = Agent(OpenAIModel("mock-text", client=client), system_prompt="Be brief.")

    first = await agent.invoke_async("Where is order 1042?")
    second = await agent.invoke_async("And order 1043?")

    for result in (first, second):
        assert (result.stop_reason, result.text) == ("end_turn", "Your order has shipped.")
        usage = result.metrics.usage
        assert usage["inputTokens"] > 0
        assert usage["outputTokens"] > 0
    assert [message["role"] for message in agent.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_the_readme_line_base_url_and_key(litellm_proxy: LiteLLMProxy) -> None:
    # The agents guide's one line for LiteLLM: the proxy's URL with /v1, and its key.
    model = OpenAIModel(
        "mock-text", base_url=f"{litellm_proxy.base_url}/v1", api_key=litellm_proxy.api_key
    )

    result = await Agent(model).invoke_async("Hi")

    assert result.text == "Your order has shipped."


async def test_the_proxys_rate_limit_is_a_throttled_error(client: openai.AsyncOpenAI) -> None:
    model = OpenAIModel("mock-throttled", client=client)

    with pytest.raises(ModelThrottledError) as caught:
        await Agent(model, retry_strategy=None).invoke_async("Hi")

    error = caught.value
    assert (error.model_id, error.status_code) == ("mock-throttled", 429)
    assert "this is a mock rate limit error" in str(error)


async def test_the_proxys_context_window_error_is_an_overflow(client: openai.AsyncOpenAI) -> None:
    model = OpenAIModel("mock-overflow", client=client)

    result = await Agent(model).invoke_async("Hi")

    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)
    assert (result.error.model_id, result.error.status_code) == ("mock-overflow", 400)


async def test_a_failed_upstream_is_a_model_error(client: openai.AsyncOpenAI) -> None:
    model = OpenAIModel("mock-broken", client=client)

    with pytest.raises(ModelError) as caught:
        await Agent(model).invoke_async("Hi")

    assert type(caught.value) is ModelError
    assert caught.value.status_code == 500


async def test_an_overloaded_upstream_is_a_throttled_error(client: openai.AsyncOpenAI) -> None:
    # The mock fails after its first chunk; the proxy reads that far before it answers,
    # so the failure arrives as Anthropic's "overloaded" status, 529, and no chunk.
    model = OpenAIModel("mock-cut-short", client=client)
    agent = Agent(model, retry_strategy=None)

    with pytest.raises(ModelThrottledError) as caught:
        await agent.invoke_async("Hi")

    assert caught.value.status_code == 529
    assert "This is a mock error raised mid-stream" in str(caught.value)
    assert [message["role"] for message in agent.messages] == ["user"]


async def test_a_wrong_key_is_a_model_error_that_does_not_show_it(
    litellm_proxy: LiteLLMProxy,
) -> None:
    key = "sk-not-the-master-key-12345"
    async with openai.AsyncOpenAI(
        base_url=f"{litellm_proxy.base_url}/v1", api_key=key, max_retries=0
    ) as client:
        model = OpenAIModel("mock-text", client=client)
        with pytest.raises(ModelError) as caught:
            await Agent(model).invoke_async("Hi")

    error = caught.value
    assert error.status_code in (400, 401)
    assert str(error).startswith(f"model 'mock-text' at {litellm_proxy.base_url}/v1/: HTTP ")
    assert key not in str(error)
    assert key not in repr(model)


async def test_a_throttled_model_falls_back_to_another_behind_the_proxy(
    client: openai.AsyncOpenAI,
) -> None:
    agent = Agent(OpenAIModel("mock-throttled", client=client), retry_strategy=None)
    agent.add_middleware(InvokeModelStage, ModelFallback([OpenAIModel("mock-text", client=client)]))

    result = await agent.invoke_async("Hi")

    assert result.text == "Your order has shipped."


async def test_tool_calls_and_results_round_trip_through_the_proxy(
    client: openai.AsyncOpenAI, litellm_upstream: FakeOpenAIServer
) -> None:
    # The provider (the fake server behind the proxy) calls a tool in fragments, then
    # answers; the proxy re-encodes both streams, and forwards the tool result.
    calls: list[int] = []

    @tool
    def lookup_order(order_id: int) -> dict[str, object]:
        """Look up an order.

        Args:
            order_id: The order number.
        """
        calls.append(order_id)
        return {"order_id": order_id, "status": "shipped"}

    litellm_upstream.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_1", name="lookup_order", arguments="")),
                chunk(tool_delta(0, arguments='{"order_id"')),
                chunk(tool_delta(0, arguments=": 1042}")),
                chunk({}, "tool_calls"),
                usage_chunk(20, 5),
            ]
        ),
        SSEReply([chunk({"content": "Order 1042 has shipped."}), chunk({}, "stop")]),
    )
    seen_before = len(litellm_upstream.requests)
    agent = Agent(OpenAIModel("via-upstream", client=client), tools=[lookup_order])

    result = await agent.invoke_async("Where is order 1042?")

    assert (result.stop_reason, result.text) == ("end_turn", "Order 1042 has shipped.")
    assert calls == [1042]
    requests = litellm_upstream.requests[seen_before:]
    assert len(requests) == 2
    assert [t["function"]["name"] for t in requests[0].body["tools"]] == ["lookup_order"]
    sent = requests[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["tool_call_id"] == "call_1"
    assert "shipped" in str(sent[-1]["content"])
