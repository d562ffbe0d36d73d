"""What a running tool receives from the host besides its input.

A tool gets the call it is answering, the run's shared state and cancel signal, and a
way to ask a human (``interrupt()``). Like a middleware interrupt, a tool interrupt is
read-only: it resolves against the answers the host captured for this call and raises
``InterruptException`` otherwise; the tool executor is what records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

from stageware._generated.payloads import ToolUse
from stageware._runtime import (
    AgentHandle,
    CancelSignal,
    Interrupt,
    interrupt_name_hash,
    resolve_middleware_interrupt,
)

__all__ = ["ToolContext", "tool_interrupt_id"]


def tool_interrupt_id(agent_id: str, tool_use_id: str, name: str) -> str:
    """The deterministic id of the interrupt a tool raises under *name* for one call.

    Scoped by the agent (``v2``; ``v1`` ids had no agent id): two agents' models may both
    name a call ``call_0``.
    """
    return f"v2:tool_call:{agent_id}:{tool_use_id}:{interrupt_name_hash(name)}"


@final
class ToolContext:
    """The host's side of one tool call, as the tool sees it.

    Attributes:
        agent: The agent that called the tool.
        tool_use: The call being answered (name, toolUseId, input).
        invocation_state: Per-invocation state, shared by reference with hooks and
            middleware.
        cancel_signal: Set when the run is cancelled; a long-running tool should check it
            and stop early.
    """

    __slots__ = ("_interrupts", "agent", "cancel_signal", "invocation_state", "tool_use")

    def __init__(
        self,
        *,
        agent: AgentHandle,
        tool_use: ToolUse,
        invocation_state: dict[str, Any],
        cancel_signal: CancelSignal,
        interrupts: Mapping[str, Interrupt] | None = None,
    ) -> None:
        self.agent: AgentHandle = agent
        self.tool_use: ToolUse = tool_use
        self.invocation_state: dict[str, Any] = invocation_state
        self.cancel_signal: CancelSignal = cancel_signal
        self._interrupts: Mapping[str, Interrupt] = {} if interrupts is None else interrupts

    def interrupt(self, name: str, *, reason: Any = None, response: Any = None) -> Any:
        """Ask a human before the tool goes on, and return the answer.

        The first call raises ``InterruptException``, which halts the run; the executor
        registers the interrupt. When the run resumes with an answer, the same call returns
        it. A preemptive *response* skips the question, but a stored human answer wins.

        Args:
            name: Names the decision; unique per tool call (equal names share one answer).
            reason: What the human is asked; surfaced to the caller.
            response: A preemptive answer; when set, no interrupt is raised.

        Raises:
            InterruptException: When no answer is available yet and none was given.
        """
        interrupt_id = tool_interrupt_id(self.agent.agent_id, str(self.tool_use["toolUseId"]), name)
        resolved = resolve_middleware_interrupt(
            self._interrupts, interrupt_id, name, reason, response
        )
        return resolved.response

    def answered(self, interrupt_id: str) -> Interrupt | None:
        """The answered interrupt *interrupt_id* of this run, if it is answered.

        How a tool that runs an agent of its own (``agent.as_tool()``) passes the answers
        the caller gave on to the agent that asked; a tool asking for itself uses
        ``interrupt()``. The response is the stored record: a policy approval's is the
        verified record, never the credential.
        """
        found = self._interrupts.get(interrupt_id)
        return found if found is not None and found.answered else None
