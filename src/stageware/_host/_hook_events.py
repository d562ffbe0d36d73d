"""Lifecycle hook events: what ``agent.add_hook`` callbacks receive.

Hooks fire around the stage chains, so they fire whatever the middleware does: a cached
model call still has its before/after model hooks. The one exception is the
``MessageAddedEvent`` of a pass's input, which fires where the input enters the history:
inside the AgentStream terminal (as in Strands 1.62), so a short-circuited pass records
no input and fires none. Most fields are read-only;
each event lists the few a hook may set (``retry``, ``cancel_tool``, ``result``, ...), and
setting any other raises ``AttributeError`` instead of being ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from stageware._generated.payloads import Message, Messages, StopReason, ToolResult, ToolUse
from stageware._runtime import (
    AgentHandle,
    Interrupt,
    interrupt_name_hash,
    resolve_middleware_interrupt,
)

from .tools import AgentTool

if TYPE_CHECKING:
    from ._agent_result import AgentResult

__all__ = [
    "AfterInvocationEvent",
    "AfterModelCallEvent",
    "AfterToolCallEvent",
    "BeforeInvocationEvent",
    "BeforeModelCallEvent",
    "BeforeToolCallEvent",
    "LifecycleEvent",
    "MessageAddedEvent",
    "ModelStopResponse",
    "before_tool_call_interrupt_id",
]


class LifecycleEvent:
    """Base of the lifecycle hook events.

    Attributes:
        agent: The agent the event belongs to.
    """

    agent: AgentHandle
    writable: ClassVar[frozenset[str]] = frozenset()
    """The fields a hook may set."""
    reverse_callbacks: ClassVar[bool] = False
    """Whether callbacks run last-registered first, so "after" hooks unwind like a stack."""

    def __setattr__(self, name: str, value: Any) -> None:
        # Dataclass __init__ assigns every field before __post_init__ seals the event.
        if getattr(self, "_sealed", False) and name not in self.writable:
            settable = ", ".join(sorted(self.writable)) or "nothing"
            raise AttributeError(
                f"{type(self).__name__}.{name} is read-only; a hook may set: {settable}"
            )
        object.__setattr__(self, name, value)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sealed", True)


@dataclass(eq=False)
class BeforeInvocationEvent(LifecycleEvent):
    """An invocation (one ``agent(...)`` call) is starting, before the AgentStream chain.

    Attributes:
        invocation_state: Per-invocation state, shared with middleware and tools.
        messages: The invocation's input, which the AgentStream terminal appends to the
            history (unless middleware replaces it or short-circuits the pass). A resume
            carries the input an agent-stream gate held back, and is empty otherwise.
    """

    agent: AgentHandle
    invocation_state: dict[str, Any]
    messages: Messages


@dataclass(eq=False)
class AfterInvocationEvent(LifecycleEvent):
    """An invocation ended, successfully or not. Callbacks run in reverse order.

    Attributes:
        invocation_state: Per-invocation state.
        result: The invocation's result, or ``None`` when it failed with an exception.
    """

    agent: AgentHandle
    invocation_state: dict[str, Any]
    result: AgentResult[Any] | None
    reverse_callbacks: ClassVar[bool] = True


@dataclass(eq=False)
class MessageAddedEvent(LifecycleEvent):
    """A message was appended to the conversation history.

    Attributes:
        message: The message, as it now sits in ``agent.messages``.
    """

    agent: AgentHandle
    message: Message


@dataclass(eq=False)
class BeforeModelCallEvent(LifecycleEvent):
    """The model is about to be called, before the InvokeModel chain runs.

    Fires for every attempt: a retry (by a hook, or of a throttled call) fires it again.

    Attributes:
        invocation_state: Per-invocation state.
        attempt: Which attempt of this model call this is: 1, then 2 for the first retry.
    """

    agent: AgentHandle
    invocation_state: dict[str, Any]
    attempt: int = 1


@dataclass(frozen=True)
class ModelStopResponse:
    """What a finished model call produced, as the agent loop will act on it.

    Attributes:
        stop_reason: Why the model stopped.
        message: The assistant message.
    """

    stop_reason: StopReason
    message: Message


@dataclass(eq=False)
class AfterModelCallEvent(LifecycleEvent):
    """A model call finished, after the InvokeModel chain. Callbacks run in reverse order.

    Set ``retry = True`` to discard this call and run the whole InvokeModel chain again.
    The events of the discarded call were already streamed. A call cut short mid-stream
    (by ``agent.cancel()``, a cancellation from outside or the caller closing the stream)
    has no after-event. A ``ModelThrottledError`` that no hook retries is retried by the
    agent's ``ModelRetryStrategy`` after these callbacks, so each attempt has its own
    before- and after-event.

    Attributes:
        invocation_state: Per-invocation state.
        stop_response: The call's outcome, or ``None`` when it raised.
        exception: What the call raised, if it failed; re-raised unless it is retried.
        retry: Writable: run the model call again.
        attempt: Which attempt of this model call this was: 1, then 2 for the first retry.
    """

    agent: AgentHandle
    invocation_state: dict[str, Any]
    stop_response: ModelStopResponse | None = None
    exception: Exception | None = None
    retry: bool = False
    attempt: int = 1
    writable: ClassVar[frozenset[str]] = frozenset({"retry"})
    reverse_callbacks: ClassVar[bool] = True


def before_tool_call_interrupt_id(agent_id: str, tool_use_id: str, name: str) -> str:
    """The deterministic id of an interrupt a BeforeToolCallEvent hook raises (``v2``:
    scoped by the agent; ``v1`` ids had no agent id)."""
    return f"v2:before_tool_call:{agent_id}:{tool_use_id}:{interrupt_name_hash(name)}"


@dataclass(eq=False)
class BeforeToolCallEvent(LifecycleEvent):
    """A tool call is about to run, before its ExecuteTool chain.

    Attributes:
        selected_tool: Writable: the tool to run, ``None`` for a tool the agent does not
            have. Replacing it changes what the chain's context carries.
        tool_use: Writable: the call (name, toolUseId, input).
        invocation_state: Per-invocation state.
        cancel_tool: Writable: ``True`` or a message to skip the call; the model receives
            an error result saying it was cancelled (with the message, if given).
    """

    agent: AgentHandle
    selected_tool: AgentTool | None
    tool_use: ToolUse
    invocation_state: dict[str, Any]
    cancel_tool: bool | str = False
    _interrupts: Mapping[str, Interrupt] = field(default_factory=dict[str, Interrupt], repr=False)
    writable: ClassVar[frozenset[str]] = frozenset({"selected_tool", "tool_use", "cancel_tool"})

    def interrupt(self, name: str, *, reason: Any = None, response: Any = None) -> Any:
        """Ask a human before the tool runs, and return the answer.

        The first call raises ``InterruptException``, which halts the run; the tool executor
        registers it. When the run resumes with an answer, the same call returns it. A
        stored human answer wins over a preemptive *response*.

        Raises:
            InterruptException: When no answer is available yet and none was given.
        """
        interrupt_id = before_tool_call_interrupt_id(
            self.agent.agent_id, str(self.tool_use["toolUseId"]), name
        )
        return resolve_middleware_interrupt(
            self._interrupts, interrupt_id, name, reason, response
        ).response


@dataclass(eq=False)
class AfterToolCallEvent(LifecycleEvent):
    """A tool call finished, after its ExecuteTool chain. Callbacks run in reverse order.

    Set ``retry = True`` to run the call again: the before-hook and the whole ExecuteTool
    chain run once more, so stateful middleware sees every attempt.

    Attributes:
        selected_tool: The tool that ran, or ``None`` for an unknown tool.
        tool_use: The call.
        invocation_state: Per-invocation state.
        result: Writable: the result the model will receive, and the one ``ToolResultEvent``
            of the call that the agent stream carries.
        exception: What failed the call, if anything raised in its ExecuteTool chain (the
            tool or a middleware) or it ended without a result; ``result`` is then the
            error result ``"Error: <message>"``.
        cancel_message: The cancellation message, when the call was cancelled.
        retry: Writable: run the call again.
    """

    agent: AgentHandle
    selected_tool: AgentTool | None
    tool_use: ToolUse
    invocation_state: dict[str, Any]
    result: ToolResult
    exception: Exception | None = None
    cancel_message: str | None = None
    retry: bool = False
    writable: ClassVar[frozenset[str]] = frozenset({"result", "retry"})
    reverse_callbacks: ClassVar[bool] = True
