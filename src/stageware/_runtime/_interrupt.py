"""Human-in-the-loop interrupts raised by middleware.

A middleware asks for a human decision with ``context.interrupt(name, ...)``. Resolution
is read-only: it looks at the answers the host captured when it built the context and
never registers anything. The host's ``InterruptException`` handler is the one place
that records a raised interrupt (the tool executor for tool calls, the run loop for the
agent stream), so there is a single source of truth for what is pending.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

__all__ = [
    "Interrupt",
    "InterruptException",
    "MiddlewareInterruptResult",
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
    """Raised to halt the run until a human answers :attr:`interrupt`.

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
    for the host to register.
    """
    stored = interrupts.get(interrupt_id)
    if stored is not None and stored.answered:
        return MiddlewareInterruptResult(response=stored.response)
    if response is not None:
        return MiddlewareInterruptResult(response=response)
    raise InterruptException(Interrupt(id=interrupt_id, name=name, reason=reason))
