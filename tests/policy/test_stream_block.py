"""A Block at ``stream.chunk`` stops the stream: nothing from the blocked chunk on reaches the
caller or the history."""

from __future__ import annotations

from typing import Any

import pytest

from stageware import ModelStreamChunkEvent
from stageware.policy import Block, PolicyEnv
from tests.host.converse_history import assert_valid_converse

from .policy_helpers import deciding, refund_agent

pytestmark = pytest.mark.anyio


async def test_nothing_after_the_blocked_chunk_reaches_the_caller() -> None:
    def no_secrets(event: Any, env: PolicyEnv) -> Block | None:
        delta = event.chunk.get("contentBlockDelta", {}).get("delta", {})
        return Block("internal marker") if "XX" in delta.get("text", "") else None

    agent, _, model = refund_agent(
        deciding("stream.chunk", no_secrets),
        script=["Sure: XX-7 is the code"],  # streamed as "Sure", ": XX", ...
    )
    streamed: list[str] = []
    result = None
    async for event in agent.stream_async("what is the code?"):
        if isinstance(event, ModelStreamChunkEvent):
            delta = event.chunk.get("contentBlockDelta", {}).get("delta", {})
            streamed.append(delta.get("text", ""))
        result = getattr(event, "result", result)
    assert result is not None
    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert result.halt.reason == "internal marker"
    # The chunks before the blocked one, and only those.
    assert "".join(streamed) == "Sure"
    assert agent.messages == [
        {"role": "user", "content": [{"text": "what is the code?"}]},
        {"role": "assistant", "content": [{"text": "This request was blocked by policy."}]},
    ]
    assert_valid_converse(agent.messages, for_request=False)
    assert len(model.requests) == 1
