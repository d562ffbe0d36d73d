"""Ready-made middleware: registered like a user's own, on its stage and no other."""

from __future__ import annotations

from datetime import timedelta
from typing import assert_type

from stageware import (
    Agent,
    ContextWindowOverflowError,
    ExecuteToolStage,
    ExecuteToolWrapHandler,
    InvokeModelStage,
    InvokeModelWrapHandler,
    MiddlewareRegistry,
    Model,
    ModelThrottledError,
    ScriptedModel,
)
from stageware.middleware import (
    CacheBackend,
    CachedResponse,
    MemoryCache,
    ModelFallback,
    ResponseCache,
    ToolRetry,
    ToolRetryAttempt,
)

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

retry = ToolRetry(
    tools=["fetch"],
    max_attempts=4,
    on=(TimeoutError,),
    when=lambda error: isinstance(error, OSError),
    on_retry=lambda attempt: print(attempt.attempt, attempt.delay),
)
agent.add_middleware(ExecuteToolStage, retry)
agent.add_middleware(ExecuteToolStage.Wrap, ToolRetry())
tool_handler: ExecuteToolWrapHandler = retry
assert_type(retry.tools, frozenset[str] | None)


def count_retry(attempt: ToolRetryAttempt) -> None:
    assert_type(attempt.error, Exception)


ToolRetry(on_retry=count_retry)

cache = ResponseCache(MemoryCache(16, ttl=timedelta(minutes=5)), stop_reasons=["end_turn"])
agent.add_middleware(InvokeModelStage, cache)
agent.add_middleware(InvokeModelStage.Wrap, ResponseCache(namespace="v2"))
model_handler: InvokeModelWrapHandler = cache
assert_type(cache.backend, CacheBackend)


class DictBackend:
    """A backend of one's own, typed by the CacheBackend protocol alone."""

    def __init__(self) -> None:
        self.entries: dict[str, CachedResponse] = {}

    async def get(self, key: str) -> CachedResponse | None:
        return self.entries.get(key)

    async def set(self, key: str, value: CachedResponse) -> None:
        self.entries[key] = value


ResponseCache(DictBackend())
own_backend: CacheBackend = DictBackend()


class BlockingBackend:
    """Not a backend: its methods are not async."""

    def get(self, key: str) -> CachedResponse | None:
        return None

    def set(self, key: str, value: CachedResponse) -> None:
        return None


# Negative cases: each line must be an error under both checkers.


def wrong_uses() -> None:
    agent.add_middleware(ExecuteToolStage, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage.Input, fallback)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ModelFallback(["gpt-4o"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    ModelFallback([backup], on=(int,))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    fallback.fallback  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    agent.add_middleware(InvokeModelStage, retry)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(ExecuteToolStage.Input, retry)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ToolRetry(on_retry=lambda attempt: attempt.attemps)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownLambdaType]
    agent.add_middleware(ExecuteToolStage, cache)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ResponseCache(BlockingBackend())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ResponseCache(stop_reasons=["finished"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
