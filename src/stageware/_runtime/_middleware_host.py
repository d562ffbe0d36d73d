"""``MiddlewareHost``: the typed ``add_middleware`` every middleware host shares.

The overloads are generic per phase: the stage token's type parameters (context,
result, event) flow into the handler's type, so one overload per phase serves every
stage, built in or declared by a harness. Nothing here depends on a stage schema.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from ._handlers import WrapHandler
from ._result import MiddlewareResult
from ._stage import InputPhase, MiddlewareStage, MiddlewareToken, OutputPhase, WrapPhase
from ._validation import MiddlewareRegistration, validate_registration

__all__ = ["MiddlewareHost"]

C = TypeVar("C")
R = TypeVar("R", bound=MiddlewareResult[Any])
E = TypeVar("E")


class MiddlewareHost(ABC):
    """Mixin: the typed ``add_middleware`` overloads for any class that accepts middleware.

    Subclasses implement ``_register_middleware``, which receives registrations that were
    already validated. The overloads bind the context, result and event types through the
    stage token, so a handler of the wrong shape is a type error at the call site.
    """

    __slots__ = ()

    @overload
    def add_middleware(
        self, stage_or_phase: InputPhase[C, R, E], handler: Callable[[C], C]
    ) -> None: ...

    @overload
    def add_middleware(
        self, stage_or_phase: InputPhase[C, R, E], handler: Callable[[C], Awaitable[C]]
    ) -> None: ...

    @overload
    def add_middleware(
        self,
        stage_or_phase: MiddlewareStage[C, R, E],
        handler: WrapHandler[C, E],
    ) -> None: ...

    @overload
    def add_middleware(
        self,
        stage_or_phase: WrapPhase[C, R, E],
        handler: WrapHandler[C, E],
    ) -> None: ...

    @overload
    def add_middleware(
        self, stage_or_phase: OutputPhase[C, R, E], handler: Callable[[R], R]
    ) -> None: ...

    @overload
    def add_middleware(
        self, stage_or_phase: OutputPhase[C, R, E], handler: Callable[[R], Awaitable[R]]
    ) -> None: ...

    def add_middleware(self, stage_or_phase: MiddlewareToken, handler: Callable[..., Any]) -> None:
        """Register *handler* on a stage or one of its phases.

        A bare stage token (``InvokeModelStage``) or its ``.Wrap`` phase takes a Wrap handler:
        an async generator function ``(context, next_fn)``, where ``next_fn(context)``
        returns an async generator of the stage's events. ``.Input`` takes a function from
        context to context and ``.Output`` one from result wrapper to result wrapper; both
        may be sync or async.

        Phases run Input, then Wrap, then Output, whatever the registration order; within
        a phase the first handler registered is the outermost.

        Raises:
            TypeError: For an unknown token, a Wrap handler that is not an async
                generator function, or a handler of the wrong arity; raised here, at
                registration, not when the stage runs.
        """
        self._register_middleware(validate_registration(stage_or_phase, handler))

    @abstractmethod
    def _register_middleware(self, registration: MiddlewareRegistration) -> None:
        """Store a validated *registration*; the host composes the chains."""
