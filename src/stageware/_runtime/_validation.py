"""Registration-time checks on tokens and handlers.

Mistakes are reported by ``add_middleware`` itself, naming the handler and the phase,
rather than surfacing later as a confusing error deep inside a running chain.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, final

from ._stage import InputPhase, MiddlewareStage, OutputPhase, Phase, WrapPhase

__all__ = [
    "MiddlewareRegistration",
    "describe_handler",
    "unknown_stage_error",
    "validate_registration",
]

# How many positional arguments a handler of each phase is called with, and what they are.
_ARGUMENTS: dict[Phase, tuple[str, ...]] = {
    Phase.INPUT: ("context",),
    Phase.WRAP: ("context", "next_fn"),
    Phase.OUTPUT: ("result",),
}


@final
@dataclass(frozen=True, slots=True)
class MiddlewareRegistration:
    """A handler that passed the registration checks, with the stage and phase it is for.

    ``MiddlewareHost.add_middleware`` builds these; a host's ``_register_middleware``
    receives them.
    """

    stage: MiddlewareStage[Any, Any, Any]
    phase: Phase
    handler: Callable[..., Any]
    is_async: bool
    """For Input and Output: whether the handler is a coroutine function."""


def validate_registration(token: object, handler: object) -> MiddlewareRegistration:
    """Resolve *token* to a stage and phase and check that *handler* fits that phase.

    Raises:
        TypeError: For anything that is not a stage or phase token, a handler that is not
            callable, a Wrap handler that is not an async generator function, an Input or
            Output handler that is one, or a handler that cannot take the phase's arguments.
    """
    stage, phase = _resolve_token(token)
    where = f"{stage!r}" if phase is Phase.WRAP and token is stage else f"{stage!r}.{phase.value}"
    if not callable(handler):
        raise TypeError(f"add_middleware({where}, ...): the handler {handler!r} is not callable")
    name = describe_handler(handler)
    if inspect.isclass(handler):
        raise TypeError(
            f"add_middleware({where}, {name}): a class is not a handler; pass an instance "
            "whose __call__ is the handler, or a function"
        )
    target = _underlying_function(handler)
    is_asyncgen = inspect.isasyncgenfunction(target)
    if phase is Phase.WRAP:
        if not is_asyncgen:
            hint = (
                " It is a coroutine function: register it on .Input or .Output, or make it a"
                " generator that yields the events of next_fn(context)."
                if inspect.iscoroutinefunction(target)
                else ""
            )
            raise TypeError(
                f"add_middleware({where}, {name}): a Wrap handler must be an async generator "
                f"function (`async def` that yields events).{hint}"
            )
    elif is_asyncgen:
        raise TypeError(
            f"add_middleware({where}, {name}): an async generator function is a Wrap handler;"
            f" register it on {stage!r}.Wrap or on the bare {stage!r} token"
        )
    _check_arity(where, name, handler, _ARGUMENTS[phase])
    return MiddlewareRegistration(
        stage=stage,
        phase=phase,
        handler=handler,
        is_async=inspect.iscoroutinefunction(target),
    )


def _resolve_token(token: object) -> tuple[MiddlewareStage[Any, Any, Any], Phase]:
    if _is_stage(token):
        return token, Phase.WRAP
    if _is_phase_token(token):
        return token.stage, token.phase
    raise TypeError(
        f"add_middleware: {token!r} is not a stage or phase token; pass a stage such as "
        "InvokeModelStage (Wrap) or one of its phases: InvokeModelStage.Input, .Wrap or .Output"
    )


# isinstance() cannot recover type arguments, and they do not matter at run time: these
# guards say so once, for both checkers.
def _is_stage(token: object) -> TypeGuard[MiddlewareStage[Any, Any, Any]]:
    return isinstance(token, MiddlewareStage)


def _is_phase_token(
    token: object,
) -> TypeGuard[InputPhase[Any, Any, Any] | WrapPhase[Any, Any, Any] | OutputPhase[Any, Any, Any]]:
    return isinstance(token, InputPhase | WrapPhase | OutputPhase)


def _underlying_function(handler: object) -> object:
    """The function whose kind (plain, coroutine, async generator) decides how to call *handler*."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    if inspect.isfunction(handler) or inspect.ismethod(handler):
        return handler
    # A callable object: its __call__ is what runs.
    return getattr(handler, "__call__", handler)  # noqa: B004 - we want the method itself


def _check_arity(
    where: str, name: str, handler: Callable[..., object], arguments: tuple[str, ...]
) -> None:
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return  # Builtins and some C callables have no signature; the call itself will tell.
    try:
        signature.bind(*arguments)
    except TypeError:
        count = len(arguments)
        plural = "" if count == 1 else "s"
        raise TypeError(
            f"add_middleware({where}, {name}): the handler must accept {count} positional "
            f"argument{plural} ({', '.join(arguments)}), but its signature is {signature}"
        ) from None


def unknown_stage_error(
    registration: MiddlewareRegistration, known: Sequence[MiddlewareStage[Any, Any, Any]]
) -> TypeError:
    """The error for a handler on a stage a host does not run; *known* are those it runs.

    A stage is named with the package its types come from, since the usual mistake is a
    token of a same-named stage from another generated package (``my_stages`` for
    ``stageware``): both checkers accept it, as each package's tokens fit its own types.
    """
    stage = registration.stage
    where = f"add_middleware({stage!r}.{registration.phase.value}, "
    where += f"{describe_handler(registration.handler)})"
    package = _stage_package(stage)
    twin = next((other for other in known if other.name == stage.name), None)
    if twin is not None:
        expected = _stage_package(twin)
        return TypeError(
            f"{where}: this {stage!r} is the one of package {package!r}, not the one of "
            f"{expected!r} that this host runs, so the handler would never run; register it "
            f"on {stage!r} imported from {expected}"
        )
    runs = ", ".join(f"{other!r} (package {_stage_package(other)!r})" for other in known)
    return TypeError(
        f"{where}: {stage!r} (package {package!r}) is not a stage this host runs, so the "
        f"handler would never run; it runs {runs or 'no stage'}"
    )


def _stage_package(stage: MiddlewareStage[Any, Any, Any]) -> str:
    """The public package a stage comes from, told by its result type's module.

    Private parts and the module itself are dropped: ``stageware._generated.results`` is
    ``stageware``, ``my_stages.results`` is ``my_stages``.
    """
    module = stage.result_type.__module__
    parts = module.split(".")
    public = list(itertools.takewhile(lambda part: not part.startswith("_"), parts))
    if public == parts and len(parts) > 1:
        public.pop()
    return ".".join(public) or module


def describe_handler(handler: object) -> str:
    """A handler's qualified name for error messages, or its repr."""
    qualname = getattr(handler, "__qualname__", None)
    return qualname if isinstance(qualname, str) else repr(handler)
