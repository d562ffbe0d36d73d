"""The public runtime: what generated packages and harness authors build on.

Every package the generator emits, ours or one generated from a user's own schema,
imports the runtime through this module and no private one, so this list is a contract:
stage tokens, the registry and its typed ``add_middleware``, results, interrupts and the
handler types. Users of the built-in stages import the same names from ``stageware``.

The list is written out, not computed: type checkers read ``__all__`` without running
the module, and pyright calls a name missing from a literal list a private import.
"""

from stageware._runtime import (
    UNSET,
    AgentHandle,
    AsyncInputHandler,
    AsyncOutputHandler,
    CallInterrupts,
    CancelSignal,
    InputHandler,
    InputPhase,
    Interrupt,
    InterruptException,
    MiddlewareHost,
    MiddlewareInterruptResult,
    MiddlewareRegistration,
    MiddlewareRegistry,
    MiddlewareResult,
    MiddlewareStage,
    MiddlewareToken,
    NextFn,
    OutputHandler,
    OutputPhase,
    Phase,
    SwallowedInterruptWarning,
    Unset,
    WrapHandler,
    WrapPhase,
    call_interrupts,
    close_all,
    copy_payload,
    interrupt_name_hash,
    resolve_middleware_interrupt,
    validate_registration,
)

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
