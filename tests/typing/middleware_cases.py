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
from stageware.middleware import ModelFallback, SlidingWindow, Summarizing

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

window = SlidingWindow(max_tokens=32_000, max_messages=None, reserve=0.2)
agent.add_middleware(InvokeModelStage, window)
summarizing = Summarizing(max_tokens=32_000, model=backup, summary_ratio=0.5)
agent.add_middleware(InvokeModelStage.Wrap, summarizing)
Agent(ScriptedModel([]), conversation_manager=window)
Agent(ScriptedModel([]), conversation_manager=Summarizing(max_tokens=8_000))
assert_type(window.max_tokens, int | None)
assert_type(window.max_messages, int | None)
assert_type(summarizing.max_tokens, int)
assert_type(summarizing.model, Model | None)


# Negative cases: each line must be an error under both checkers.


def wrong_uses() -> None:
    agent.add_middleware(ExecuteToolStage, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage.Input, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ModelFallback(["gpt-4o"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    ModelFallback([backup], on=(int,))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    fallback.fallback  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    agent.add_middleware(ExecuteToolStage, window)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage.Input, summarizing)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    SlidingWindow(max_tokens="32k")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    SlidingWindow(32_000)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    Summarizing()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    Summarizing(max_tokens=1_000, model="gpt-4o")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    Agent(ScriptedModel([]), conversation_manager=40)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
