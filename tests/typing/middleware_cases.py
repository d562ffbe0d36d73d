"""Ready-made middleware: registered like a user's own, on its stage and no other.

``require_approval`` is a declared policy middleware: it goes into a ``PolicyEngine``,
not onto a stage, and not straight into ``Agent(policy=...)``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import assert_type

from stageware import (
    Agent,
    AgentStreamStage,
    ContextWindowOverflowError,
    ExecuteToolOutputHandler,
    ExecuteToolStage,
    ExecuteToolWrapHandler,
    InvokeModelInputHandler,
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
    CallLimits,
    MemoryCache,
    ModelFallback,
    PIIPattern,
    RedactPII,
    ResponseCache,
    SlidingWindow,
    Summarizing,
    ToolRetry,
    ToolRetryAttempt,
    require_approval,
)
from stageware.policy import MiddlewareDef, PolicyEngine

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

gate = require_approval(["refund"], approvers=["role:finance"], when=lambda i: i["amount"] > 100)
assert_type(gate, MiddlewareDef)
names: list[str] = ["refund", "wire"]
PolicyEngine([gate, require_approval(frozenset(names), name="wire_gate")])
Agent(ScriptedModel([]), policy=PolicyEngine([require_approval(("refund",), reason="Pay?")]))

redact = RedactPII(["email", PIIPattern("customer_id", r"C-\d+")], replacement="hash")
redact.install(agent)
RedactPII(model_output=False).install(MiddlewareRegistry())
redact_input: InvokeModelInputHandler = redact.redact_input
redact_output: InvokeModelWrapHandler = redact.redact_output
redact_result: ExecuteToolOutputHandler = redact.redact_tool_result
agent.add_middleware(InvokeModelStage, redact.redact_output)
assert_type(redact.redact("ana@example.com"), str)
assert_type(redact.patterns, tuple[PIIPattern, ...])

limits = CallLimits(max_tool_calls=3, per_tool={"search": 2}, on_limit="stop")
limits.install(agent)
limit_tool_call: ExecuteToolWrapHandler = limits.limit_tool_call
agent.add_middleware(AgentStreamStage.Wrap, limits.keep_run)
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
retry = ToolRetry(
    tools=["fetch"],
    max_attempts=4,
    on=(TimeoutError,),
    when=lambda error: isinstance(error, OSError),
    on_retry=lambda attempt: print(attempt.attempt, attempt.delay),
)
agent.add_middleware(ExecuteToolStage, retry)
agent.add_middleware(ExecuteToolStage.Wrap, ToolRetry(tools=["fetch"]))
tool_handler: ExecuteToolWrapHandler = retry
assert_type(retry.tools, frozenset[str])


def count_retry(attempt: ToolRetryAttempt) -> None:
    assert_type(attempt.error, Exception)


ToolRetry(tools=["fetch"], on_retry=count_retry)

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
    require_approval(tools="refund")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    require_approval(tools=[1])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    require_approval(["refund"], when=lambda i: i.amount > 100)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownLambdaType]
    Agent(ScriptedModel([]), policy=gate)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    agent.add_middleware(ExecuteToolStage.Input, gate)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]
    RedactPII(["emial"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    RedactPII(replacement="blur")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    agent.add_middleware(InvokeModelStage.Output, redact.redact_input)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(ExecuteToolStage, redact.redact_output)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    CallLimits(3)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    CallLimits(max_tool_calls=1, on_limit="halt")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    agent.add_middleware(InvokeModelStage, limits.limit_tool_call)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(ExecuteToolStage, window)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage.Input, summarizing)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    SlidingWindow(max_tokens="32k")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    SlidingWindow(32_000)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    Summarizing()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    Summarizing(max_tokens=1_000, model="gpt-4o")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    Agent(ScriptedModel([]), conversation_manager=40)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    agent.add_middleware(InvokeModelStage, retry)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(ExecuteToolStage.Input, retry)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ToolRetry()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    ToolRetry(tools=["fetch"], on_retry=lambda attempt: attempt.attemps)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownLambdaType]
    agent.add_middleware(ExecuteToolStage, cache)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    ResponseCache(BlockingBackend())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ResponseCache(stop_reasons=["finished"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
