"""How middleware ends a run early or has a step redone, and the records it leaves.

The policy engine decides at hook points inside the stage chains; the host carries out
the decision:

- ``HaltRun`` ends the run. Raised in the ExecuteTool chain, the call gets an error
  result and the round finishes (other calls included) before the run ends; raised in the
  InvokeModel chain, the response never enters the history; raised in the AgentStream
  chain, the pass ends where it is. The history is left valid and closed by the halt's
  assistant message (see ``_event_loop`` and ``_invocation``).
- ``RedoStep`` reruns the step it was raised in: the model call, or the tool call, with
  its hooks, like a hook's ``retry``. With ``feedback``, the model call is made again
  with the text added to its request, for the model to read (``_model_call``).
- ``RefuseCall`` answers the tool call it was raised in with an error result instead of
  running it; the run goes on, and the model reads the result.

The host does not interpret decisions: it keeps the ``Decision`` records of a pass and
reports them, with the ``Halt``, on the run's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from stageware._generated.payloads import Message, StopReason

__all__ = ["Decision", "Halt", "HaltRun", "RedoStep", "RefuseCall"]


@final
@dataclass(frozen=True, slots=True)
class Decision:
    """The trace record of one policy middleware call at one hook point.

    Attributes:
        run_id: The run it belongs to.
        hook: The hook point (``tool.before``).
        middleware: The middleware's installed name.
        band: Its band.
        outcome: ``continue``, ``block``, ``suspend``, ``escalate``, ``retry`` or
            ``guide``: what the engine acted on, after the fail mode (a crash under
            ``closed`` is ``block``).
        reason: The outcome's reason (a guide's feedback), or the error's description.
        modified: Whether a ``Continue`` changed the payload.
        duration_ms: How long the call took.
        attempt: The step's attempt (1, then 2 after a retry, ...).
        error: What went wrong with the middleware (a raise, a timeout, a bad outcome),
            or ``None``.
        timed_out: Whether the error was its timeout.
        notes: What the middleware added with ``env.note()``.
        approver: For a decision that carries out an approver's answer, who answered, as
            the authenticator (or the operating system) verified them.
    """

    run_id: str
    hook: str
    middleware: str
    band: str
    outcome: str
    reason: str | None = None
    modified: bool = False
    duration_ms: float = 0.0
    attempt: int = 1
    error: str | None = None
    timed_out: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple[str, ...])
    approver: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Halt:
    """Why a run ended early: a middleware blocked the step or escalated the run.

    Attributes:
        stop_reason: ``blocked`` or ``escalated``.
        hook: The hook point where it was decided.
        middleware: The middleware that decided (or whose error decided, fail closed).
        reason: The reason it gave, or the error, or the spent retry budget.
        message: The assistant message the user sees instead of the step.
        escalation_id: The escalation record's id, for ``escalated``.
    """

    stop_reason: StopReason
    hook: str
    middleware: str
    reason: str
    message: Message
    escalation_id: str | None = None


class HaltRun(Exception):
    """Ends the run with ``halt``: raised by the policy engine from a stage chain."""

    def __init__(self, halt: Halt) -> None:
        super().__init__(f"{halt.stop_reason} at {halt.hook} by {halt.middleware}: {halt.reason}")
        self.halt = halt


class RedoStep(Exception):
    """Reruns the model call or tool call it was raised in: a policy ``Retry`` or ``Guide``.

    Args:
        reason: Why, for the trace.
        feedback: For a model call, text the next attempt's request carries at its end, for
            the model to read; it stays until the call's response is accepted, and never
            enters the history.
    """

    def __init__(self, reason: str, feedback: str | None = None) -> None:
        super().__init__(reason)
        self.feedback = feedback


class RefuseCall(Exception):
    """Gives the tool call it was raised in an error result instead of running it.

    The call's result is ``message``, with status ``error``; the run goes on, and the model
    reads it with the round's other results: a policy ``Guide`` at ``tool.before``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
