"""The stageware runtime: stage tokens, results, interrupts and the middleware registry.

It knows nothing that the generator emits: generated packages import it (through the
public ``stageware.runtime``), never the reverse, and a test keeps it so.
"""

from ._chain import close_all
from ._copy import copy_payload
from ._handlers import (
    AsyncInputHandler,
    AsyncOutputHandler,
    InputHandler,
    NextFn,
    OutputHandler,
    WrapHandler,
)
from ._interrupt import (
    CallInterrupts,
    Interrupt,
    InterruptException,
    MiddlewareInterruptResult,
    SwallowedInterruptWarning,
    call_interrupts,
    interrupt_name_hash,
    resolve_middleware_interrupt,
)
from ._middleware_host import MiddlewareHost
from ._protocols import AgentHandle, CancelSignal
from ._registry import MiddlewareRegistry
from ._result import MiddlewareResult
from ._stage import InputPhase, MiddlewareStage, MiddlewareToken, OutputPhase, Phase, WrapPhase
from ._unset import UNSET, Unset
from ._validation import MiddlewareRegistration, validate_registration

__all__ = [
    "UNSET",
    "AgentHandle",
    "AsyncInputHandler",
    "AsyncOutputHandler",
    "CallInterrupts",
    "CancelSignal",
    "InputHandler",
    "InputPhase",
    "Interrupt",
    "InterruptException",
    "MiddlewareHost",
    "MiddlewareInterruptResult",
    "MiddlewareRegistration",
    "MiddlewareRegistry",
    "MiddlewareResult",
    "MiddlewareStage",
    "MiddlewareToken",
    "NextFn",
    "OutputHandler",
    "OutputPhase",
    "Phase",
    "SwallowedInterruptWarning",
    "Unset",
    "WrapHandler",
    "WrapPhase",
    "call_interrupts",
    "close_all",
    "copy_payload",
    "interrupt_name_hash",
    "resolve_middleware_interrupt",
    "validate_registration",
]
