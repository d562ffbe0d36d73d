"""The state an agent's run loop works on, shared by the loop's modules.

``Agent`` is the public face; this is what the run loop, the model call and the tool
executor read and write. Keeping it in one plain object lets those modules stay small
without reaching into the agent's private attributes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, final

from stageware._generated.events import EventLoopStopEvent
from stageware._generated.payloads import (
    Message,
    Messages,
    SystemContentBlock,
    ToolChoice,
)
from stageware._generated.stages import AgentStreamStage, ExecuteToolStage, InvokeModelStage
from stageware._runtime import AgentHandle, MiddlewareRegistry

from ._agent_result import AgentMetrics
from ._agent_state import AgentState
from ._agent_tools import AgentTools
from ._cancel import CancelToken
from ._cancel_watch import CancelWatch
from ._halt import Decision, Halt
from ._hook_events import MessageAddedEvent
from ._hooks import HookRegistry
from ._interrupt_state import AnswerCheck, InterruptState
from ._limits import DEFAULT_MAX_MODEL_CALLS
from ._model_retry import ModelRetryStrategy
from .models import Model, ModelError
from .sessions import Escalation
from .tracing import Tracing

if TYPE_CHECKING:
    from ._session import AgentSession
    from ._structured_output import StructuredRun
    from .tracing._spans import InvocationTrace

__all__ = ["AgentCore", "AgentExtension", "PassState"]


class AgentExtension(Protocol):
    """Something installed on an agent when it is built: a policy engine, for one.

    The host knows nothing of policies; the policy layer registers its middleware and
    hooks on the agent's core through this one method.
    """

    def install(self, core: AgentCore) -> None:
        """Register what the extension needs on *core* (before any user middleware)."""
        ...


@final
@dataclass(eq=False)
class AgentCore:
    """One agent's configuration and live state."""

    handle: AgentHandle
    model: Model
    tools: AgentTools
    system_prompt: str | list[SystemContentBlock] | None
    tool_choice: ToolChoice | None
    messages: Messages
    state: AgentState
    model_state: dict[str, Any]
    session: AgentSession | None = None
    registry: MiddlewareRegistry = field(
        # Its stages only: a handler on another package's same-named token would never run.
        default_factory=lambda: MiddlewareRegistry(
            stages=(AgentStreamStage, InvokeModelStage, ExecuteToolStage)
        )
    )
    hooks: HookRegistry = field(default_factory=HookRegistry)
    interrupts: InterruptState = field(default_factory=InterruptState)
    cancel: CancelToken = field(default_factory=CancelToken)
    retry_strategy: ModelRetryStrategy | None = field(default_factory=ModelRetryStrategy)
    max_model_calls: int | None = DEFAULT_MAX_MODEL_CALLS
    current_pass: PassState | None = None
    answer_checks: list[AnswerCheck] = field(default_factory=list[AnswerCheck])
    """The checks a resume's answers pass before they are stored (``InterruptState.resume``);
    one raises ``ValueError`` to refuse the resume before anything runs."""
    pending_escalation: Escalation | None = None
    """The escalation this invocation's run ended on; the final save records it
    (``AgentSession.release``)."""
    tracing: Tracing = field(default_factory=Tracing)

    @property
    def tool_specs(self) -> AgentTools:
        """The tools, as the model call reads them: ``tool_specs.current()``."""
        return self.tools

    def check_agent(self, context: object) -> None:
        """Refuse a stage context whose ``agent`` was replaced.

        ``replace()`` cannot set it; this catches ``dataclasses.replace()``, whose
        replacement the stage would otherwise ignore without a word.

        Raises:
            RuntimeError: Naming the context type.
        """
        if getattr(context, "agent", None) is not self.handle:
            raise RuntimeError(
                f"{type(context).__name__}.agent was replaced (with dataclasses.replace); "
                "the stage always runs for the agent that started it"
            )

    async def append_message(self, message: Message) -> None:
        """Append *message* to the history and fire ``MessageAddedEvent`` for it."""
        self.messages.append(message)
        await self.hooks.fire(MessageAddedEvent(agent=self.handle, message=message))

    async def merge_into_last(self, message: Message) -> None:
        """Replace the history's last message with *message*, which holds it and more.

        ``MessageAddedEvent`` fires with *message*: what was added is now part of it.
        """
        self.messages[-1] = message
        await self.hooks.fire(MessageAddedEvent(agent=self.handle, message=message))


@final
@dataclass(eq=False)
class PassState:
    """What one agent pass (one invocation) tracks while it runs.

    Attributes:
        input: The pass's input as the host built it; the AgentStream context carries a
            copy, and a gate that stops the pass before the terminal keeps this for the
            resume.
        cancel_watch: Cuts the parts of the pass that overrun a ``cancel()``.
        max_model_calls: How many model calls the pass may make; ``None`` for no limit.
        input_appended: Whether the terminal has appended the (context's) input to the
            history.
        started: When the pass started (``time.monotonic()``).
        metrics: Counters for the result.
        last_stop: The stop event the pass produced, as the terminal yielded it. Once it is
            set, an agent-stream interrupt is refused, unless it is the ``interrupt`` stop
            of a tool round (replayed on resume, so it may be gated on top).
        model_call_refused: Whether :meth:`refuse_model_call` refused a call, which ends
            the pass with the limit's stop.
        decisions: The policy decisions taken in the pass, in order.
        halt: Why the pass was halted by a policy, once it was.
        error: The model error that ended the pass without raising: the
            ``ContextWindowOverflowError`` of a ``context_window_overflow`` stop.
        trace: The invocation's spans, when it is traced.
        takeover: Whether the pass continues a run whose worker died before its final
            save (an unfinished session, continued with no prompt).
        output: What a structured run (``output_type=``) asks for; ``None`` for a plain run.
    """

    input: Messages
    cancel_watch: CancelWatch
    max_model_calls: int | None
    input_appended: bool = False
    started: float = field(default_factory=time.monotonic)
    metrics: AgentMetrics = field(default_factory=AgentMetrics)
    last_stop: EventLoopStopEvent | None = None
    model_call_refused: bool = False
    decisions: list[Decision] = field(default_factory=list[Decision])
    halt: Halt | None = None
    error: ModelError | None = None
    trace: InvocationTrace | None = None
    takeover: bool = False
    output: StructuredRun | None = None

    def refuse_model_call(self) -> bool:
        """Whether the next model call is over the limit (retries count); notes a refusal."""
        limit = self.max_model_calls
        if limit is None or self.metrics.model_calls < limit:
            return False
        self.model_call_refused = True
        return True
