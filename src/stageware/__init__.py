"""stageware: typed middleware around the stages of an AI-agent run.

Public names are re-exported here once; the modules behind them are private.
"""

from stageware import _generated, hooks
from stageware._generated import *  # noqa: F403 - the generated package's __all__ is the list
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
    MiddlewareRegistration,
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
    "MiddlewareRegistration",
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
    "hooks",
]
# Everything generated from the stage schema, as the generated package lists it.
__all__ += _generated.__all__
