"""@middleware: a handler declared for one hook point is checked against that point's event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, assert_type

from pydantic import BaseModel

from stageware._generated.policy_decorator import MiddlewareDeclaration
from stageware.policy import (
    Block,
    Guide,
    HookEvent,
    HookPoint,
    MiddlewareDef,
    ModelRequestEvent,
    ModelResponseEvent,
    Outcome,
    PolicyEngine,
    PolicyEnv,
    StreamChunkEvent,
    ToolCallEvent,
    ToolResultEvent,
    middleware,
)

# Positive cases.


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def no_weekend_refunds(event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
    return None


@middleware(hooks=[HookPoint.TOOL_BEFORE], fail_mode="closed")
async def no_deletes(event: ToolCallEvent, env: PolicyEnv) -> Block | None:
    return Block("no deletes") if event.tool_name == "delete" else None


@middleware(hooks=["model.response", "stream.chunk"], fail_mode="closed")
async def plain_answers(
    event: ModelResponseEvent | StreamChunkEvent, env: PolicyEnv
) -> Guide | None:
    return Guide("answer in sentences, not JSON") if env.attempt == 1 else None


@middleware(hooks=("model.request",), fail_mode="open", band="platform")
async def count_requests(event: ModelRequestEvent, env: PolicyEnv) -> None:
    env.note(event.model_id)


@middleware(hooks=["tool.before", "tool.after"], fail_mode="open")
async def audit_tools(event: ToolCallEvent | ToolResultEvent, env: PolicyEnv) -> None:
    env.note(event.tool_use_id)


@middleware(hooks=list(HookPoint), fail_mode="open")
async def audit_everything(event: HookEvent, env: PolicyEnv) -> None:
    env.note(event.run_id)


@middleware(hooks=["tool.after"], fail_mode="open")
async def any_event_will_do(event: HookEvent, env: PolicyEnv) -> None:
    return None


class Limits(BaseModel):
    limit: int


class CapResults:
    """A class middleware: built with its config, its instances are the handlers."""

    def __init__(self, config: Limits) -> None:
        self.limit = config.limit

    async def __call__(self, event: ToolResultEvent, env: PolicyEnv) -> Outcome | None:
        return None if len(event.result["content"]) <= self.limit else Block("too long")


class Gate:
    """A class middleware without settings."""

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Block | None:
        return None


@middleware(hooks=["tool.before"], fail_mode="closed", name="refund_limit")
class DecoratedGate:
    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
        return None


# The call form declares a class as a MiddlewareDef for both checkers.
refund_limit = middleware(hooks=["tool.before"], fail_mode="closed", name="refund_limit")(Gate)
capped_results = middleware(hooks=("tool.after",), fail_mode="open", config=Limits)(CapResults)


def classes_declared_with_a_call_are_middleware_defs() -> None:
    assert_type(refund_limit, MiddlewareDef)
    assert_type(capped_results, MiddlewareDef)
    assert_type(refund_limit.build(), Callable[[Any, PolicyEnv], Awaitable[Outcome | None]])
    assert_type(PolicyEngine([refund_limit, capped_results]), PolicyEngine)


def a_decorated_class_is_a_middleware_def_for_pyright_only() -> None:
    # mypy ignores what a class decorator returns and keeps the class (python/mypy#3135,
    # open): no overload can change that, hence the call form above. Should mypy start
    # honouring class decorators, these ignores become unused and fail the run.
    assert_type(DecoratedGate, MiddlewareDef)  # type: ignore[assert-type]
    DecoratedGate.build()  # type: ignore[attr-defined]


def declarations_are_middleware_defs() -> None:
    assert_type(middleware, MiddlewareDeclaration[MiddlewareDef, PolicyEnv, Outcome | None])
    assert_type(no_weekend_refunds, MiddlewareDef)
    assert_type(no_deletes, MiddlewareDef)
    assert_type(plain_answers, MiddlewareDef)
    assert_type(count_requests, MiddlewareDef)
    assert_type(audit_tools, MiddlewareDef)
    assert_type(audit_everything, MiddlewareDef)
    assert_type(any_event_will_do, MiddlewareDef)
    # A class is declared with a call here: mypy keeps a decorated class's own type.
    capped = middleware(hooks={"tool.after"}, fail_mode="open", config=Limits, sample={"limit": 3})
    assert_type(capped(CapResults), MiddlewareDef)


# Expected errors.


@middleware(hooks=["tool.before"], fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
async def wrong_event(event: ModelRequestEvent, env: PolicyEnv) -> None:
    return None


@middleware(hooks=("tool.before",), fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
async def wrong_event_in_a_tuple(event: ModelRequestEvent, env: PolicyEnv) -> None:
    return None


@middleware(hooks=["tool.before"], fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
def not_async(event: ToolCallEvent, env: PolicyEnv) -> None:
    return None


@middleware(hooks=["tool.before"], fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
async def wrong_env(event: ToolCallEvent, env: str) -> None:
    return None


@middleware(hooks=["tool.before"], fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
async def not_an_outcome(event: ToolCallEvent, env: PolicyEnv) -> str:
    return "block"


@middleware(hooks=["tool.before"], fail_mode="closed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
class WrongEventClass:
    async def __call__(self, event: ToolResultEvent, env: PolicyEnv) -> None:
        return None


def guide_feedback_is_text() -> None:
    assert_type(Guide("say why").feedback, str)
    Guide(feedback=["say why"])  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    Guide()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    # A Guide refuses the step; it changes nothing: that is Continue(modified=...).
    Guide("say why", modified={"input": {}})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def the_hooks_are_a_collection() -> None:
    middleware(hooks="tool.before", fail_mode="open")  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]


# Without `fail_mode`, the error is `"FailModeRequired" not callable` on the decorator's line
# (test_declaration_messages.py checks the wording), not "no overload matches" on `hooks`.


@middleware(hooks=["tool.before"])  # type: ignore[operator]  # pyright: ignore[reportCallIssue, reportUntypedFunctionDecorator]
async def no_fail_mode(event: ToolCallEvent, env: PolicyEnv) -> None:
    return None


@middleware(hooks=("tool.before",), band="platform")  # type: ignore[operator]  # pyright: ignore[reportCallIssue, reportUntypedFunctionDecorator]
async def no_fail_mode_in_a_tuple(event: ToolCallEvent, env: PolicyEnv) -> None:
    return None


# mypy reports a class decorator's error on the `class` line.
@middleware(hooks=["tool.after"], config=Limits)  # pyright: ignore[reportCallIssue, reportUntypedClassDecorator]
class NoFailModeClass:  # type: ignore[operator]
    def __init__(self, config: Limits) -> None:
        self.limit = config.limit

    async def __call__(self, event: ToolResultEvent, env: PolicyEnv) -> None:
        return None
