"""What one invocation of an agent returns, and the event ``stream_async`` ends with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, cast, final

from typing_extensions import TypeVar

from stageware._generated.payloads import Message, StopReason, Usage
from stageware._runtime import Interrupt

from ._halt import Decision, Halt
from ._structured_errors import StructuredOutputError
from .models import ModelError

__all__ = ["AgentMetrics", "AgentResult", "AgentResultEvent", "OutputT"]

# Defaults to None: a plain ``AgentResult`` is the result of a run that asked for no output.
OutputT = TypeVar("OutputT", default=None)


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
class AgentResult(Generic[OutputT]):
    """The outcome of one ``agent(...)`` call; ``AgentResult[M]`` for ``output_type=M``.

    Attributes:
        stop_reason: Why the run stopped: ``end_turn``, ``interrupt``, ``cancelled``, ...
        message: The last message of the run (an empty assistant message when it stopped
            before producing one).
        interrupts: What the run is waiting for when ``stop_reason`` is ``interrupt``;
            answer them by calling the agent with
            ``[{"interruptResponse": {"interruptId": ..., "response": ...}}]``.
        metrics: Calls, cycles, tokens and time.
        state: The request state the pass left (``EventLoopStopEvent.request_state``).
        structured_output: The validated output of a structured run (Strands' name for
            ``output``), or ``None`` when the run stopped before producing it or
            asked for none.
        decisions: Every policy decision of the run, in order (empty without a policy).
        halt: Which middleware blocked or escalated the run, at which hook and why, when
            ``stop_reason`` is ``blocked`` or ``escalated``.
        output_type: The type the run was asked to produce (``output_type=``), or
            ``None`` for a plain run.
        error: The model error that ended the run without raising: the
            ``ContextWindowOverflowError`` when ``stop_reason`` is
            ``context_window_overflow``; otherwise ``None``.
    """

    stop_reason: StopReason
    message: Message
    interrupts: list[Interrupt] = field(default_factory=list[Interrupt])
    metrics: AgentMetrics = field(default_factory=AgentMetrics)
    state: dict[str, Any] = field(default_factory=dict[str, Any])
    structured_output: OutputT | None = None
    decisions: list[Decision] = field(default_factory=list[Decision])
    halt: Halt | None = None
    output_type: type[Any] | None = None
    error: ModelError | None = None

    @property
    def output(self) -> OutputT:
        """The run's structured output, an instance of ``output_type``; ``None`` for a plain run.

        Raises:
            StructuredOutputError: If the run was asked for an output but stopped before
                producing it (``stop_reason`` says why: ``interrupt``, ``blocked``,
                ``cancelled``, ``limit_model_calls``, ``context_window_overflow``, ...).
        """
        if self.output_type is None or self.structured_output is not None:
            # A plain run's OutputT is None, and so is its structured_output.
            return cast("OutputT", self.structured_output)
        name = getattr(self.output_type, "__name__", repr(self.output_type))
        hint = (
            "; answer result.interrupts to resume it, and the resumed run returns the output"
            if self.stop_reason == "interrupt"
            else ""
        )
        raise StructuredOutputError(
            f"the run stopped with stop_reason {self.stop_reason!r} before producing its "
            f"{name} output{hint}",
            last_reply=self.message,
            errors=[],
        )

    @property
    def text(self) -> str:
        """The text blocks of ``message``, joined by newlines."""
        return "\n".join(block["text"] for block in self.message["content"] if "text" in block)

    def __str__(self) -> str:
        return self.text


@final
@dataclass(frozen=True, slots=True)
class AgentResultEvent(Generic[OutputT]):
    """The last event of ``agent.stream_async()``: the invocation's result."""

    is_interrupt: ClassVar[bool] = False
    result: AgentResult[OutputT]
