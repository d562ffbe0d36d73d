"""What one invocation of an agent returns, and the event ``stream_async`` ends with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, final

from stageware._generated.payloads import Message, StopReason, Usage
from stageware._runtime import Interrupt

from ._halt import Decision, Halt

__all__ = ["AgentMetrics", "AgentResult", "AgentResultEvent"]


def _zero_usage() -> Usage:
    return {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}


@final
@dataclass
class AgentMetrics:
    """What one invocation did and cost.

    Attributes:
        cycles: Model turns taken (a tool round followed by the next model call is one
            more cycle).
        model_calls: Model calls made, retries included; a call served by middleware
            without reaching the model counts too.
        tool_calls: Tool calls whose ExecuteTool chain ran, retries included.
        usage: Token counts summed over the model calls the loop acted on (a call a hook
            retried, or one cancelled mid-stream, reported none). Prompt-cache reads and
            writes are there once a call reported them.
        latency_ms: Wall-clock time of the invocation.
    """

    cycles: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=_zero_usage)
    latency_ms: int = 0

    def add_usage(self, usage: Usage) -> None:
        """Add one model call's token counts, every count it carries."""
        total = self.usage
        total["inputTokens"] += usage["inputTokens"]
        total["outputTokens"] += usage["outputTokens"]
        total["totalTokens"] += usage["totalTokens"]
        # Optional counts: absent means "not reported", not zero, so they appear only
        # once some call reported them.
        if "cacheReadInputTokens" in usage:
            total["cacheReadInputTokens"] = (
                total.get("cacheReadInputTokens", 0) + usage["cacheReadInputTokens"]
            )
        if "cacheWriteInputTokens" in usage:
            total["cacheWriteInputTokens"] = (
                total.get("cacheWriteInputTokens", 0) + usage["cacheWriteInputTokens"]
            )


@final
@dataclass(frozen=True)
class AgentResult:
    """The outcome of one ``agent(...)`` call.

    Attributes:
        stop_reason: Why the run stopped: ``end_turn``, ``interrupt``, ``cancelled``, ...
        message: The last message of the run (an empty assistant message when it stopped
            before producing one).
        interrupts: What the run is waiting for when ``stop_reason`` is ``interrupt``;
            answer them by calling the agent with
            ``[{"interruptResponse": {"interruptId": ..., "response": ...}}]``.
        metrics: Calls, cycles, tokens and time.
        state: The request state the pass left (``EventLoopStopEvent.request_state``).
        structured_output: Whatever structured output middleware put on the stop event;
            this host does not request structured output itself, so it is ``None``
            unless an AgentStream handler set it.
        decisions: Every policy decision of the run, in order (empty without a policy).
        halt: Which middleware blocked or escalated the run, at which hook and why, when
            ``stop_reason`` is ``blocked`` or ``escalated``.
    """

    stop_reason: StopReason
    message: Message
    interrupts: list[Interrupt] = field(default_factory=list[Interrupt])
    metrics: AgentMetrics = field(default_factory=AgentMetrics)
    state: dict[str, Any] = field(default_factory=dict[str, Any])
    structured_output: Any = None
    decisions: list[Decision] = field(default_factory=list[Decision])
    halt: Halt | None = None

    @property
    def text(self) -> str:
        """The text blocks of :attr:`message`, joined by newlines."""
        return "\n".join(block["text"] for block in self.message["content"] if "text" in block)

    def __str__(self) -> str:
        return self.text


@final
@dataclass(frozen=True, slots=True)
class AgentResultEvent:
    """The last event of ``agent.stream_async()``: the invocation's result."""

    is_interrupt: ClassVar[bool] = False
    result: AgentResult
