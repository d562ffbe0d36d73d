"""The stageware runtime: stage tokens, results, interrupts and the middleware registry.

Generated code imports from here; users import the same names from ``stageware``.
"""

from ._handlers import (
    AsyncInputHandler,
    AsyncOutputHandler,
    InputHandler,
    NextFn,
    OutputHandler,
    WrapHandler,
)
from ._interrupt import (
    Interrupt,
    InterruptException,
    MiddlewareInterruptResult,
    interrupt_name_hash,
    resolve_middleware_interrupt,
)
from ._protocols import AgentHandle, AgentTool, CancelSignal, Model
from ._result import MiddlewareResult
from ._stage import InputPhase, MiddlewareStage, MiddlewareToken, OutputPhase, Phase, WrapPhase
from ._tool_context import ToolContext, tool_interrupt_id
from ._unset import UNSET, Unset
from ._validation import MiddlewareRegistration, validate_registration

__all__ = [
    "UNSET",
    "AgentHandle",
    "AgentTool",
    "AsyncInputHandler",
    "AsyncOutputHandler",
    "CancelSignal",
    "InputHandler",
    "InputPhase",
    "Interrupt",
    "InterruptException",
    "MiddlewareInterruptResult",
    "MiddlewareRegistration",
    "MiddlewareResult",
    "MiddlewareStage",
    "MiddlewareToken",
    "Model",
    "NextFn",
    "OutputHandler",
    "OutputPhase",
    "Phase",
    "ToolContext",
    "Unset",
    "WrapHandler",
    "WrapPhase",
    "interrupt_name_hash",
    "resolve_middleware_interrupt",
    "tool_interrupt_id",
    "validate_registration",
]
