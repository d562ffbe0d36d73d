"""stageware: typed middleware around the stages of an AI-agent run.

Public names are re-exported here once; the modules behind them are private.
"""

from stageware._runtime import (
    UNSET,
    AgentHandle,
    AgentTool,
    AsyncInputHandler,
    AsyncOutputHandler,
    CancelSignal,
    InputHandler,
    InputPhase,
    Interrupt,
    InterruptException,
    MiddlewareInterruptResult,
    MiddlewareResult,
    MiddlewareStage,
    MiddlewareToken,
    Model,
    NextFn,
    OutputHandler,
    OutputPhase,
    Phase,
    Unset,
    WrapHandler,
    WrapPhase,
)
from stageware._runtime._registry import MiddlewareRegistry

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
    "MiddlewareRegistry",
    "MiddlewareResult",
    "MiddlewareStage",
    "MiddlewareToken",
    "Model",
    "NextFn",
    "OutputHandler",
    "OutputPhase",
    "Phase",
    "Unset",
    "WrapHandler",
    "WrapPhase",
]
