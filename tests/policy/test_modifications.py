"""``Continue(modified=...)``: what a modification changes at each hook point."""

from __future__ import annotations

from typing import Any

import pytest

from stageware import ScriptedModel
from stageware.policy import Continue, PolicyEnv

from .policy_helpers import deciding, refund_agent, refund_script

pytestmark = pytest.mark.anyio


def _modify(**changes: Any) -> Any:
    def decide(event: Any, env: PolicyEnv) -> Continue:
        return Continue(modified=event.model_copy(update=changes))

    return decide


async def test_tool_before_changes_the_tool_input() -> None:
    agent, ledger, _ = refund_agent(deciding("tool.before", _modify(input={"amount": 10})))
    await agent.invoke_async("refund")
    assert ledger.payouts == [10]


async def test_tool_after_changes_the_result_the_model_reads() -> None:
    def redact(event: Any, env: PolicyEnv) -> Continue:
        result = {**event.result, "content": [{"text": "[redacted]"}]}
        return Continue(modified={"result": result})

    agent, ledger, model = refund_agent(deciding("tool.after", redact))
    await agent.invoke_async("refund")
    assert ledger.payouts == [50]
    tool_result = model.requests[1].messages[-1]["content"][0]["toolResult"]
    assert tool_result["content"] == [{"text": "[redacted]"}]


async def test_input_received_changes_the_input_the_history_keeps() -> None:
    new = [{"role": "user", "content": [{"text": "refund (cleaned)"}]}]
    agent, _, model = refund_agent(deciding("input.received", _modify(messages=new)))
    await agent.invoke_async("refund 4111-1111-1111-1111")
    assert agent.messages[0] == new[0]
    assert model.requests[0].messages[0] == new[0]


async def test_context_assemble_changes_the_prompt_of_one_call() -> None:
    agent, _, model = refund_agent(deciding("context.assemble", _modify(system_prompt="Be brief.")))
    await agent.invoke_async("refund")
    assert [r.system_prompt for r in model.requests] == ["Be brief.", "Be brief."]
    assert agent.system_prompt is None


async def test_model_request_changes_the_messages_sent() -> None:
    def add_note(event: Any, env: PolicyEnv) -> Continue:
        last = event.messages[-1]
        noted = {"role": last["role"], "content": [*last["content"], {"text": "(checked)"}]}
        return Continue(modified={"messages": [*event.messages[:-1], noted]})

    agent, _, model = refund_agent(deciding("model.request", add_note))
    await agent.invoke_async("refund")
    assert model.requests[0].messages[-1]["content"][-1] == {"text": "(checked)"}
    # The call's copy, not the history.
    assert agent.messages[0]["content"] == [{"text": "refund"}]


async def test_route_select_routes_the_call_to_a_known_model() -> None:
    small = ScriptedModel(refund_script())
    agent, _, model = refund_agent(
        deciding("route.select", _modify(model_id="small")), models={"small": small}
    )
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert len(small.requests) == 2
    assert model.requests == []


async def test_route_select_to_an_unknown_model_is_a_middleware_error() -> None:
    agent, _, _ = refund_agent(deciding("route.select", _modify(model_id="huge")))
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"
    assert result.decisions[0].error is not None
    assert "does not know" in result.decisions[0].error


async def test_stream_chunk_changes_what_the_caller_and_the_history_get() -> None:
    def shout(event: Any, env: PolicyEnv) -> Continue | None:
        delta = event.chunk.get("contentBlockDelta", {}).get("delta", {})
        if "text" not in delta:
            return None
        chunk = {
            "contentBlockDelta": {
                **event.chunk["contentBlockDelta"],
                "delta": {"text": delta["text"].upper()},
            }
        }
        return Continue(modified={"chunk": chunk})

    agent, _, _ = refund_agent(deciding("stream.chunk", shout), script=["all done here"])
    texts: list[str] = []
    async for event in agent.stream_async("hello"):
        chunk = getattr(event, "chunk", None)
        if chunk and "contentBlockDelta" in chunk:
            texts.append(chunk["contentBlockDelta"]["delta"].get("text", ""))
    assert "".join(texts) == "ALL DONE HERE"
    assert agent.messages[-1] == {"role": "assistant", "content": [{"text": "ALL DONE HERE"}]}


async def test_model_response_changes_the_message_the_history_gets() -> None:
    def rewrite(event: Any, env: PolicyEnv) -> Continue | None:
        if event.stop_reason != "end_turn":
            return None
        return Continue(modified={"message": {"role": "assistant", "content": [{"text": "OK."}]}})

    agent, _, _ = refund_agent(deciding("model.response", rewrite))
    result = await agent.invoke_async("refund")
    assert result.text == "OK."
    assert agent.messages[-1]["content"] == [{"text": "OK."}]


async def test_output_final_changes_the_answer_and_the_history_keeps_it() -> None:
    redacted = {"role": "assistant", "content": [{"text": "Refund done for [customer]."}]}
    agent, _, _ = refund_agent(deciding("output.final", _modify(message=redacted)))
    result = await agent.invoke_async("refund")
    assert result.message == redacted
    assert agent.messages[-1] == redacted
