"""AnthropicModel through the LiteLLM proxy's Anthropic-compatible ``/v1/messages``.

The proxy (``conftest.litellm_proxy``, a real third-party server run on loopback once per
session) takes the Messages API request, forwards it as a chat completion to the fake
provider behind its ``via-upstream`` model, and streams the answer back as Anthropic's
SSE events, re-encoded by LiteLLM, not by us. So the adapter reads a stream written by
someone else's encoder, as it would behind a LiteLLM deployment. The proxy's mocked
models answer ``/v1/messages`` with one JSON body even when asked to stream, so they
serve only its errors (throttling, a context window exceeded), in the proxy's words.
"""

from __future__ import annotations

import pytest

from stageware import (
    Agent,
    ContextWindowOverflowError,
    ModelError,
    ModelThrottledError,
    tool,
)
from stageware.anthropic import AnthropicModel

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk, tool_delta, usage_chunk
from .litellm_proxy import LiteLLMProxy

pytestmark = pytest.mark.anyio


async def test_an_agent_calls_a_tool_and_answers_through_the_proxys_messages_api(
    litellm_proxy: LiteLLMProxy, litellm_upstream: FakeOpenAIServer
) -> None:
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
                chunk({"content": "Let me look."}),
                chunk(tool_delta(0, id="call_1", name="lookup_order", arguments="")),
                chunk(tool_delta(0, arguments='{"order_id"')),
                chunk(tool_delta(0, arguments=": 1042}")),
                chunk({}, "tool_calls"),
                usage_chunk(20, 5),
            ]
        ),
        SSEReply(
            [
                chunk({"content": "Order 1042 "}),
                chunk({"content": "has shipped."}),
                chunk({}, "stop"),
                usage_chunk(40, 6),
            ]
        ),
    )
    seen_before = len(litellm_upstream.requests)
    # The proxy's own URL, without /v1: the SDK adds /v1/messages.
    model = AnthropicModel(
        "via-upstream", base_url=litellm_proxy.base_url, api_key=litellm_proxy.api_key
    )
    agent = Agent(model, tools=[lookup_order], system_prompt="Be brief.")

    result = await agent.invoke_async("Where is order 1042?")

    assert (result.stop_reason, result.text) == ("end_turn", "Order 1042 has shipped.")
    assert calls == [1042]
    assert result.metrics.usage["inputTokens"] > 0
    assert result.metrics.usage["outputTokens"] > 0
    # The model's first turn came back through LiteLLM's encoder as text and a tool call.
    first_turn = agent.messages[1]["content"]
    assert {"text": "Let me look."} in first_turn
    uses = [block["toolUse"] for block in first_turn if "toolUse" in block]
    assert [(use["name"], use["input"]) for use in uses] == [("lookup_order", {"order_id": 1042})]
    # What the proxy made of the adapter's requests, as the provider received them.
    requests = litellm_upstream.requests[seen_before:]
    assert len(requests) == 2
    assert [t["function"]["name"] for t in requests[0].body["tools"]] == ["lookup_order"]
    sent = requests[1].body["messages"]
    assert sent[0]["role"] == "system"
    assert "Be brief." in str(sent[0]["content"])
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["tool_call_id"] == uses[0]["toolUseId"]
    assert "shipped" in str(sent[-1]["content"])


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        pytest.param("mock-throttled", ModelThrottledError, id="throttled"),
        pytest.param("mock-overflow", ContextWindowOverflowError, id="context window exceeded"),
    ],
)
async def test_the_proxys_errors_reach_the_agent_as_their_kind(
    litellm_proxy: LiteLLMProxy, model_id: str, kind: type[ModelError]
) -> None:
    model = AnthropicModel(model_id, base_url=litellm_proxy.base_url, api_key=litellm_proxy.api_key)

    with pytest.raises(ModelError) as caught:
        async for _ in model.stream([{"role": "user", "content": [{"text": "Hi"}]}]):
            pass

    assert type(caught.value) is kind
    assert str(caught.value).startswith(f"model '{model_id}' at {litellm_proxy.base_url}")
