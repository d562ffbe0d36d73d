"""Shared helpers for the end-to-end ``Agent`` tests (tests/host/test_agent_*.py).

Everything here is built from the public ``stageware`` API and the spec, not from the
host's private modules: the interrupt ids, for instance, are recomputed from the spec's
formula rather than taken from the host's own helper.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from stageware import (
    Agent,
    AgentResult,
    AgentResultEvent,
    AgentStreamEvent,
    ExecuteToolEvent,
    Message,
    Messages,
    ModelRequest,
    Prompt,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionSnapshot,
    SessionStore,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolContext,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)


def name_hash(name: str) -> str:
    """``uuid5(NAMESPACE_OID, name)``, as the spec derives interrupt ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, name))


# Every id is scoped by the agent's id; an Agent() with the default name has "agent".


def execute_tool_interrupt_id(tool_use_id: str, name: str, agent_id: str = "agent") -> str:
    return f"v2:middleware_execute_tool:{agent_id}:{tool_use_id}:{name_hash(name)}"


def agent_stream_interrupt_id(name: str, agent_id: str = "agent") -> str:
    return f"v2:middleware_agent_stream:{agent_id}:{name_hash(name)}"


def tool_call_interrupt_id(tool_use_id: str, name: str, agent_id: str = "agent") -> str:
    return f"v2:tool_call:{agent_id}:{tool_use_id}:{name_hash(name)}"


def before_tool_call_interrupt_id(tool_use_id: str, name: str, agent_id: str = "agent") -> str:
    return f"v2:before_tool_call:{agent_id}:{tool_use_id}:{name_hash(name)}"


def answer(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    """A resume prompt answering each ``(interrupt id, response)`` pair."""
    return [
        {"interruptResponse": {"interruptId": interrupt_id, "response": response}}
        for interrupt_id, response in pairs
    ]


def calls(*tool_calls: tuple[str, dict[str, Any], str]) -> ScriptedTurn:
    """A scripted turn calling ``(name, input, toolUseId)`` tools, in order."""
    return ScriptedTurn(
        tool_calls=[
            ScriptedToolCall(name, tool_input, id=tool_use_id)
            for name, tool_input, tool_use_id in tool_calls
        ]
    )


def usage(inputs: int, outputs: int) -> Usage:
    return {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}


def texts(message: Message) -> list[str]:
    """The text blocks of *message*."""
    return [block["text"] for block in message["content"] if "text" in block]


def tool_results(message: Message) -> list[ToolResult]:
    """The tool results a (user) message carries, in order."""
    return [block["toolResult"] for block in message["content"] if "toolResult" in block]


def result_text(result: ToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return "".join(part["text"] for part in result["content"] if "text" in part)


def all_tool_results(messages: Messages) -> list[ToolResult]:
    """Every tool result in the history, oldest first."""
    found: list[ToolResult] = []
    for message in messages:
        found.extend(tool_results(message))
    return found


def last_user_texts(request: ModelRequest) -> list[str]:
    """The texts of the last message a model request carried."""
    return texts(request.messages[-1])


async def collect(
    agent: Agent, prompt: Prompt = None, *, invocation_state: dict[str, Any] | None = None
) -> tuple[list[AgentStreamEvent], AgentResult]:
    """Drain ``stream_async``; return the events before the result, and the result.

    Also checks that the stream ends with exactly one ``AgentResultEvent``.
    """
    events: list[AgentStreamEvent] = []
    results: list[AgentResult] = []
    async for event in agent.stream_async(prompt, invocation_state=invocation_state):
        if isinstance(event, AgentResultEvent):
            results.append(event.result)
        else:
            assert not results, "an event followed the AgentResultEvent"
            events.append(event)
    assert len(results) == 1
    return events, results[0]


ToolBody = Callable[[ToolUse, ToolContext], AsyncIterator[ExecuteToolEvent]]
"""What a ``PlainTool`` runs: its ``stream`` method, given as a function."""


class PlainTool:
    """A hand-written ``AgentTool`` (not ``@tool``), whose ``stream`` is given as a function."""

    def __init__(self, name: str, body: ToolBody) -> None:
        self._name = name
        self._body = body
        self.calls: list[ToolUse] = []

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        return {
            "name": self._name,
            "description": f"The {self._name} tool.",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }

    async def stream(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        self.calls.append(tool_use)
        async for event in self._body(tool_use, context):
            yield event


def event_types(events: Sequence[object]) -> list[str]:
    """The class names of *events*, with runs of stream chunks collapsed to one name."""
    names: list[str] = []
    for event in events:
        name = type(event).__name__
        if name == "ModelStreamChunkEvent" and names and names[-1] == name:
            continue
        names.append(name)
    return names


class ModelStateCounter:
    """A model that keeps a counter in the ``model_state`` the host hands it."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.seen: list[dict[str, Any]] = []

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        state: dict[str, Any] = kwargs["model_state"]
        self.seen.append(dict(state))
        state["calls"] = state.get("calls", 0) + 1
        return self.inner.stream(
            messages,
            tool_specs,
            system_prompt,
            tool_choice=tool_choice,
            system_prompt_content=system_prompt_content,
        )


def stored_snapshot(store: SessionStore, session_id: str) -> SessionSnapshot:
    """The snapshot *store* holds for *session_id*, which must exist."""
    stored = store.load(session_id)
    assert stored is not None, f"no session {session_id!r} in {store!r}"
    return stored.snapshot


def seed_session(store: SessionStore, session_id: str, snapshot: SessionSnapshot) -> None:
    """Save *snapshot* as a new session, as an earlier process would have left it."""
    store.save(session_id, snapshot, expected_version=0, owner="seed", lease_seconds=None)
