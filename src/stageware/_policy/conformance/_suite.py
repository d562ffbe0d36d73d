"""The suite itself: build a middleware, call it at each declared hook, collect failures.

The examples are drawn before the event loop starts (hypothesis is synchronous), then
every call runs in one ``anyio.run`` on the backend asked for. At each hook the examples
run shortest first and stop at the first one that shows a failure: one failing event per
hook is what an author needs, and a middleware that overruns its timeout costs one
timeout per hook rather than one per example.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias

import anyio
from pydantic import BaseModel

from stageware._generated.policy_points import HOOK_POINTS, HookPoint
from stageware._policy._choices import choose
from stageware._policy._declare import Handler, MiddlewareDef
from stageware._policy._env import PolicyEnv

from ._checks import Call, check_call
from ._examples import Example, examples_for
from ._failures import Check, ConformanceError, ConformanceFailure

__all__ = [
    "DEFAULT_EXAMPLES",
    "UNDECLARED_TIMEOUT",
    "Backend",
    "assert_conforms",
    "check_middleware",
]

Backend: TypeAlias = Literal["asyncio", "trio"]
"""The event loops the host runs on, and so the ones a middleware must work on."""

DEFAULT_EXAMPLES: Final = 25
"""Events per hook point unless the caller asks for another number."""

UNDECLARED_TIMEOUT: Final = 5.0
"""Seconds the suite waits for a middleware that declares no timeout, so that one that
never returns fails the suite instead of hanging it."""


def check_middleware(
    definition: MiddlewareDef,
    *,
    examples: int = DEFAULT_EXAMPLES,
    settings: Mapping[str, Any] | None = None,
    hooks: Iterable[HookPoint | str] | None = None,
    events: Iterable[BaseModel] = (),
    backend: Backend = "asyncio",
) -> list[ConformanceFailure]:
    """Run the conformance suite on one declared middleware; return what it found wrong.

    The middleware is built once, with *settings* or else its ``sample``, and called with
    *examples* generated events at each of its hook points (or the subset *hooks*), after
    the *events* given for that hook point: generated events rarely name the tool or
    hold the amount a middleware looks for, so give the ones that reach its branches.
    Call it from synchronous code: it runs its own event loop.

    Raises:
        ValueError: For a hook the middleware does not declare, an event of such a hook
            or of no hook point, or *examples* below 1.
    """
    if examples < 1:
        raise ValueError(f"examples must be at least 1, got {examples}")
    points = _chosen_hooks(definition, hooks)
    given = _given_examples(definition, events)
    try:
        handler = definition.build(definition.sample if settings is None else settings)
    except Exception as error:
        return [_build_failure(definition, settings, error)]
    drawn = {point: (*given.get(point, ()), *examples_for(point, examples)) for point in points}
    return anyio.run(_check_hooks, definition, handler, drawn, backend=backend)


def assert_conforms(
    definition: MiddlewareDef,
    *,
    examples: int = DEFAULT_EXAMPLES,
    settings: Mapping[str, Any] | None = None,
    hooks: Iterable[HookPoint | str] | None = None,
    events: Iterable[BaseModel] = (),
    backend: Backend = "asyncio",
) -> None:
    """Like ``check_middleware``, for a test: raise if anything was found wrong.

    Raises:
        ConformanceError: Listing every failure.
    """
    __tracebackhide__ = True  # pytest shows the failures, not this frame
    failures = check_middleware(
        definition,
        examples=examples,
        settings=settings,
        hooks=hooks,
        events=events,
        backend=backend,
    )
    if failures:
        raise ConformanceError(failures)


def _chosen_hooks(
    definition: MiddlewareDef, hooks: Iterable[HookPoint | str] | None
) -> tuple[HookPoint, ...]:
    if hooks is None:
        return definition.hooks
    chosen = tuple(dict.fromkeys(choose(HookPoint, hook, "hook point") for hook in hooks))
    undeclared = [point.value for point in chosen if point not in definition.hooks]
    if undeclared:
        declared = ", ".join(point.value for point in definition.hooks)
        raise ValueError(
            f"middleware {definition.name!r} does not declare {', '.join(undeclared)} "
            f"(it declares {declared})"
        )
    return chosen


def _given_examples(
    definition: MiddlewareDef, events: Iterable[BaseModel]
) -> dict[HookPoint, list[Example]]:
    points = {spec.event: point for point, spec in HOOK_POINTS.items()}
    given: dict[HookPoint, list[Example]] = {}
    for event in events:
        point = points.get(type(event))
        if point is None:
            raise ValueError(f"a {type(event).__name__} is not the event of a hook point")
        if point not in definition.hooks:
            raise ValueError(
                f"an event of {point} was given, but middleware {definition.name!r} does not "
                f"declare {point}"
            )
        given.setdefault(point, []).append(Example(event, session_id="session-1", attempt=1))
    return given


def _build_failure(
    definition: MiddlewareDef, settings: Mapping[str, Any] | None, error: Exception
) -> ConformanceFailure:
    given = "the settings given" if settings is not None else "its sample settings"
    hint = ""
    if settings is None and definition.sample is None and definition.config is not None:
        hint = "; declare sample=... in @middleware(...) so that the suite can build it"
    return ConformanceFailure(
        definition.name,
        None,
        Check.BUILD,
        f"could not be built with {given}: {type(error).__name__}: {error}{hint}",
    )


async def _check_hooks(
    definition: MiddlewareDef, handler: Handler, drawn: Mapping[HookPoint, tuple[Example, ...]]
) -> list[ConformanceFailure]:
    if definition.timeout is None:
        limit = UNDECLARED_TIMEOUT
        limit_text = f"the suite's {limit:g}s limit (it declares no timeout)"
    else:
        limit = definition.timeout.total_seconds()
        limit_text = f"its {limit:g}s timeout"
    logger = logging.getLogger(f"stageware.policy.{definition.name}")
    failures: list[ConformanceFailure] = []
    for point, examples in drawn.items():
        call = Call(definition.name, handler, point, limit, limit_text)
        for example in examples:
            run_id = getattr(example.event, "run_id", None)
            env = PolicyEnv(
                run_id=run_id if isinstance(run_id, str) else "conformance-run",
                session_id=example.session_id,
                agent_name="conformance-agent",
                hook=point,
                middleware=definition.name,
                band=definition.band,
                attempt=example.attempt,
                logger=logger,
            )
            found = await check_call(call, example.event, env)
            if found:
                failures.extend(found)
                break
    return failures
