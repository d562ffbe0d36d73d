"""Ready-made middleware: registered like a user's own, on its stage and no other."""

from __future__ import annotations

from typing import assert_type

from stageware import (
    Agent,
    ContextWindowOverflowError,
    ExecuteToolStage,
    InvokeModelStage,
    InvokeModelWrapHandler,
    MiddlewareRegistry,
    Model,
    ModelThrottledError,
    ScriptedModel,
)
from stageware.middleware import ModelFallback

agent = Agent(ScriptedModel([]))
backup = ScriptedModel([])

# Positive cases.

fallback = ModelFallback([backup], on=(ModelThrottledError,), unless=(), buffer=True)
agent.add_middleware(InvokeModelStage, fallback)
agent.add_middleware(InvokeModelStage.Wrap, ModelFallback([backup]))
MiddlewareRegistry().add_middleware(InvokeModelStage, fallback)
handler: InvokeModelWrapHandler = fallback
assert_type(fallback.fallbacks, tuple[Model, ...])
ModelFallback((backup,), unless=(ContextWindowOverflowError,))


# Negative cases: each line must be an error under both checkers.


def wrong_uses() -> None:
    agent.add_middleware(ExecuteToolStage, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage.Input, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ModelFallback(["gpt-4o"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    ModelFallback([backup], on=(int,))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    fallback.fallback  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
