"""Shared helpers for the Strands parity tests, built from the public ``stageware`` API only.

Strands' tests drive ``Agent(model=MockedModelProvider([...messages]))``; here the
scripted messages become ``ScriptedModel`` turns (a string is a text turn, ``tool_turn``
a turn that calls tools), ``MockHookProvider(event_types="all")`` becomes a hook on
``LifecycleEvent``, and a tool whose ``stream`` Strands replaces by hand becomes a
``PlainTool`` (from ``tests.host.agent_helpers``) whose body is given as a function.
"""

from __future__ import annotations

from typing import Any

from stageware import (
    Agent,
    AgentResult,
    EventLoopStopEvent,
    LifecycleEvent,
    Message,
    ModelStopReason,
    ModelStreamChunkEvent,
    ScriptedToolCall,
    ScriptedTurn,
    ToolResult,
)


def tool_turn(
    name: str, tool_input: dict[str, Any], tool_use_id: str, text: str = ""
) -> ScriptedTurn:
    """A scripted assistant turn that calls one tool (Strands' ``toolUse`` message)."""
    return ScriptedTurn(text=text, tool_calls=[ScriptedToolCall(name, tool_input, id=tool_use_id)])


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"text": text}]}


def first_text(message: Message) -> str:
    """The text of the first content block of *message* (Strands' ``content[0]["text"]``)."""
    return message["content"][0]["text"]


def model_stop(text: str) -> ModelStopReason:
    """An end_turn model result with *text*, as a caching middleware would yield it."""
    return ModelStopReason(
        stop_reason="end_turn",
        message=assistant(text),
        usage={"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        metrics={"latencyMs": 0},
    )


def pass_stop(text: str) -> EventLoopStopEvent:
    """An end_turn stop event for a pass (Strands' ``EventLoopStopEvent("end_turn", ...)``)."""
    return EventLoopStopEvent(
        stop_reason="end_turn", message=assistant(text), metrics={"latencyMs": 0}, request_state={}
    )


def text_chunk(text: str) -> ModelStreamChunkEvent:
    """A text delta chunk (Strands' ``TextStreamEvent``)."""
    return ModelStreamChunkEvent(chunk={"contentBlockDelta": {"delta": {"text": text}}})


def chunk_text(event: object) -> str | None:
    """The text delta *event* carries, if it is a text chunk."""
    if not isinstance(event, ModelStreamChunkEvent):
        return None
    delta = event.chunk.get("contentBlockDelta")
    return None if delta is None else delta["delta"].get("text")


def tool_result_messages(agent: Agent) -> list[Message]:
    """The user messages of the history that carry tool results."""
    return [
        message
        for message in agent.messages
        if message["role"] == "user" and any("toolResult" in block for block in message["content"])
    ]


def first_tool_result(agent: Agent) -> ToolResult:
    """The first tool result in the history."""
    return tool_result_messages(agent)[0]["content"][0]["toolResult"]


def approve(result: AgentResult, response: Any = "yes") -> list[dict[str, Any]]:
    """A resume prompt answering every interrupt of *result* with *response*."""
    return [
        {"interruptResponse": {"interruptId": interrupt.id, "response": response}}
        for interrupt in result.interrupts
    ]


def answer(interrupt_id: str, response: Any) -> list[dict[str, Any]]:
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": response}}]


def record_lifecycle(agent: Agent) -> list[LifecycleEvent]:
    """Every lifecycle event the agent fires, in order (Strands' ``MockHookProvider("all")``)."""
    events: list[LifecycleEvent] = []
    agent.add_hook(events.append, LifecycleEvent)
    return events
