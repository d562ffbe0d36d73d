"""Stage tokens: the handles middleware is registered on.

A stage is a step of an agent run (a model call, a tool call, the whole agent stream).
Its token carries three type parameters, the context, the Output wrapper and the event
union, and three phase sub-tokens. Registering on ``Stage.Input``, ``Stage.Wrap`` or
``Stage.Output`` (or on the bare token, which means Wrap) lets the checkers infer the
handler's parameter types from the token alone.
"""

from __future__ import annotations

import enum
from typing import Any, Generic, TypeAlias, TypeVar, final

from ._result import MiddlewareResult

__all__ = ["InputPhase", "MiddlewareStage", "MiddlewareToken", "OutputPhase", "Phase", "WrapPhase"]

# Invariant on purpose: a handler for one stage's context must not fit another stage.
C = TypeVar("C")
R = TypeVar("R", bound=MiddlewareResult[Any])
E = TypeVar("E")


class Phase(enum.StrEnum):
    """Where in a stage a handler runs. Phases run in this order whatever the registration order."""

    INPUT = "Input"
    """Transforms the context on the way in: ``(context) -> context``."""
    WRAP = "Wrap"
    """Wraps the rest of the chain: an async generator ``(context, next_fn) -> events``."""
    OUTPUT = "Output"
    """Transforms the final result on the way out: ``(result) -> result``."""


class _PhaseToken(Generic[C, R, E]):
    """Common part of the three phase sub-tokens."""

    __slots__ = ("stage",)
    phase: Phase

    def __init__(self, stage: MiddlewareStage[C, R, E]) -> None:
        self.stage: MiddlewareStage[C, R, E] = stage

    def __repr__(self) -> str:
        return f"{self.stage.name}Stage.{self.phase.value}"


@final
class InputPhase(_PhaseToken[C, R, E]):
    """``Stage.Input``: handlers take the context and return the context to use."""

    __slots__ = ()
    phase = Phase.INPUT


@final
class WrapPhase(_PhaseToken[C, R, E]):
    """``Stage.Wrap``: async generator handlers around the rest of the chain."""

    __slots__ = ()
    phase = Phase.WRAP


@final
class OutputPhase(_PhaseToken[C, R, E]):
    """``Stage.Output``: handlers take the result wrapper and return the one to use."""

    __slots__ = ()
    phase = Phase.OUTPUT


@final
class MiddlewareStage(Generic[C, R, E]):
    """A stage of an agent run that middleware can be registered on.

    Built-in stages are generated from the stage schema. A harness can declare its own:

    ```python
    MyStage: MiddlewareStage[MyContext, MyResult, MyEvent] = MiddlewareStage(
        "My", result_type=MyResult, result_event=MyDone
    )
    ```

    Args:
        name: The stage's name, used in error messages and ``repr``.
        result_type: The ``MiddlewareResult`` subclass Output handlers receive and return.
        result_event: The event class that is the stage's result. The last event of this
            type a chain yields is the result.
    """

    __slots__ = ("Input", "Output", "Wrap", "name", "result_event", "result_type")

    def __init__(
        self,
        name: str,
        *,
        result_type: type[R],
        result_event: type[Any],
    ) -> None:
        if not _is_result_class(result_type):
            raise TypeError(
                f"MiddlewareStage {name!r}: result_type must be a MiddlewareResult subclass, "
                f"got {result_type!r}"
            )
        if not _is_class(result_event):
            raise TypeError(
                f"MiddlewareStage {name!r}: result_event must be a class, got {result_event!r}"
            )
        self.name: str = name
        self.result_type: type[R] = result_type
        self.result_event: type[Any] = result_event
        self.Input: InputPhase[C, R, E] = InputPhase(self)
        self.Wrap: WrapPhase[C, R, E] = WrapPhase(self)
        self.Output: OutputPhase[C, R, E] = OutputPhase(self)

    def __repr__(self) -> str:
        # Reads like the token's name in code: "InvokeModel" is `InvokeModelStage`.
        return self.name if self.name.endswith("Stage") else f"{self.name}Stage"


def _is_class(candidate: object) -> bool:
    return isinstance(candidate, type)


def _is_result_class(candidate: object) -> bool:
    # Checked at run time too: a stage declared from untyped code must fail here, not mid-run.
    return isinstance(candidate, type) and issubclass(candidate, MiddlewareResult)


MiddlewareToken: TypeAlias = (
    MiddlewareStage[Any, Any, Any]
    | InputPhase[Any, Any, Any]
    | WrapPhase[Any, Any, Any]
    | OutputPhase[Any, Any, Any]
)
"""Anything ``add_middleware`` accepts as its first argument."""
