"""Human-in-the-loop interrupts raised by middleware.

A middleware asks for a human decision with ``context.interrupt(name, ...)``. Resolution
never touches the host's interrupt state: it looks at the answers the host captured when
it built the context and never registers anything. The host's ``InterruptException``
handler is the one place that records a raised interrupt (the tool executor for tool
calls, the run loop for the agent stream), so there is a single source of truth for what
is pending.

What resolution does write is the call's own ``CallInterrupts`` record: the first
interrupt it raised for the call. A middleware that catches that ``InterruptException``
(an ``except Exception`` around ``interrupt()`` or ``next_fn``) would otherwise turn a
pause for a human into a run that goes on unapproved; the chain reads the record and
stops the call anyway (see ``_chain``).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, final

__all__ = [
    "CallInterrupts",
    "Interrupt",
    "InterruptException",
    "MiddlewareInterruptResult",
    "SwallowedInterruptWarning",
    "call_interrupts",
    "interrupt_name_hash",
    "resolve_middleware_interrupt",
]


@dataclass
class Interrupt:
    """A pause that waits for a human answer.

    Attributes:
        id: Deterministic id; the same gate in a resumed run has the same id, which is
            how an answer finds its way back to the code that asked.
        name: The name the middleware gave the interrupt.
        reason: What the human is asked, surfaced to the caller.
        response: The human's answer once the run is resumed; ``None`` while pending.
    """

    id: str
    name: str
    reason: Any = None
    response: Any = None

    @property
    def answered(self) -> bool:
        """Whether a response has been recorded. A falsy answer such as ``False`` counts."""
        return self.response is not None


class InterruptException(Exception):
    """Raised to halt the run until a human answers ``interrupt``.

    It subclasses ``Exception``, so a broad ``except Exception`` in a middleware swallows
    it and turns a pause into an ordinary error: middleware that catch errors around
    ``next_fn`` or ``interrupt()`` must re-raise ``InterruptException``.
    """

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(interrupt)
        self.interrupt = interrupt

    def __str__(self) -> str:
        return f"interrupt {self.interrupt.name!r} ({self.interrupt.id}) is waiting for a response"


@final
@dataclass(frozen=True)
class MiddlewareInterruptResult:
    """What ``context.interrupt()`` returns once the run resumes with an answer.

    The answer is wrapped rather than returned bare so fields can be added later
    without breaking callers.

    Attributes:
        response: The human's answer, or the middleware's own preemptive ``response``.
    """

    response: Any


class SwallowedInterruptWarning(RuntimeWarning):
    """Code caught the ``InterruptException`` that ``interrupt()`` raised, and went on.

    A middleware around ``context.interrupt()``, or, in the reference host, a tool around
    ``ToolContext.interrupt()`` or a hook around ``BeforeToolCallEvent.interrupt()``. The
    call is stopped anyway and the original interrupt re-raised to the host, so the run
    still waits for a human; the warning is there to get the code fixed.
    """


@final
class CallInterrupts(Mapping[str, Interrupt]):
    """The interrupts of one stage call: the answers captured for it, and what it raised.

    An interruptible context carries one in its ``_interrupts`` field: ``from_host``
    creates it and every copy ``replace()`` (or ``dataclasses.replace``) makes shares it,
    so whatever runs for the call sees the same record. As a mapping it holds the answered
    interrupts by id, copied when it is built.

    Attributes:
        raised: The first ``InterruptException`` that ``resolve_middleware_interrupt``
            raised for this call, or ``None``. Set once, by the runtime.
    """

    __slots__ = ("_answers", "_warned", "raised")

    def __init__(self, answers: Mapping[str, Interrupt] | None = None) -> None:
        self._answers: dict[str, Interrupt] = {} if answers is None else dict(answers)
        self.raised: InterruptException | None = None
        self._warned = False

    def __getitem__(self, interrupt_id: str) -> Interrupt:
        return self._answers[interrupt_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._answers)

    def __len__(self) -> int:
        return len(self._answers)

    def __repr__(self) -> str:
        return f"CallInterrupts({self._answers!r}, raised={self.raised!r})"

    def swallowed(self, catcher: str) -> InterruptException:
        """Return the interrupt this call raised, warning (once per call) that it was caught.

        Whoever runs the call (the chain, or a host around a tool or a hook) calls this
        when the call went on after ``raised`` was set, and raises the result, so the
        original exception reaches the host. *catcher* names what caught it
        (``"ExecuteToolStage middleware"``, ``"the tool 'refund'"``).
        """
        raised = self.raised
        assert raised is not None, "only a call that raised an interrupt can have swallowed it"
        if not self._warned:
            self._warned = True
            interrupt = raised.interrupt
            warnings.warn(
                f"interrupt {interrupt.name!r} ({interrupt.id}) was raised by interrupt() and "
                f"then caught by {catcher}, which went on without it: the code catches "
                "InterruptException (often through a broad `except Exception`) and does not "
                "re-raise it. The call was stopped and the interrupt re-raised, so the run "
                "still waits for a human; re-raise InterruptException there.",
                SwallowedInterruptWarning,
                stacklevel=3,
            )
        return raised


def call_interrupts(context: object) -> CallInterrupts | None:
    """The ``CallInterrupts`` record *context* carries in ``_interrupts``, if it has one."""
    record = getattr(context, "_interrupts", None)
    # By exact type, which the class being final allows: isinstance with an ABC (Mapping)
    # behind it cost more than the rest of a chain's setup, and this runs on every call.
    return record if type(record) is CallInterrupts else None


def interrupt_name_hash(name: str) -> str:
    """Return the stable id component for an interrupt *name* (uuid5 in the OID namespace)."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, name))


def resolve_middleware_interrupt(
    interrupts: Mapping[str, Interrupt],
    interrupt_id: str,
    name: str,
    reason: Any,
    response: Any,
) -> MiddlewareInterruptResult:
    """Resolve a middleware interrupt against the answers captured for this context.

    A stored human answer wins over a preemptive *response*: a middleware default must
    never override what a person decided. Without either, raise ``InterruptException``
    for the host to register; when *interrupts* is a ``CallInterrupts`` record, the first
    exception raised is also kept in it, so the chain can stop a call that caught it.
    """
    stored = interrupts.get(interrupt_id)
    if stored is not None and stored.answered:
        return MiddlewareInterruptResult(response=stored.response)
    if response is not None:
        return MiddlewareInterruptResult(response=response)
    raised = InterruptException(Interrupt(id=interrupt_id, name=name, reason=reason))
    if isinstance(interrupts, CallInterrupts) and interrupts.raised is None:
        interrupts.raised = raised
    raise raised
