"""Spans around middleware handlers: the ``instrument`` of a traced invocation's registry.

Each handler of the agent's registry is wrapped once, when the instrumented registry
takes it (``MiddlewareRegistry.instrumented``), in a function that opens a
``middleware <Stage>.<Phase>`` span each time the handler runs. Its parent is the current
span, which is the span of the stage the handler runs in: the stage's stream is advanced
with that span attached (see ``_spans``).

An Input or Output handler runs with its own span attached, so what it starts (a
policy decision, a span of the application's) nests under it. A Wrap handler's span is
not attached: the handler is an async generator, whose steps may run in different
contexts, and the rest of the chain, which runs inside it, keeps the stage's span as
its parent.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Tracer

from stageware._runtime import MiddlewareRegistration, Phase
from stageware._runtime._validation import describe_handler

from . import _names as n
from ._spans import end_span

__all__ = ["HandlerSpans"]


@final
class HandlerSpans:
    """Wraps an agent's handlers in spans from ``tracer``, which each invocation sets."""

    __slots__ = ("tracer",)

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def instrument(self, registration: MiddlewareRegistration) -> MiddlewareRegistration:
        """*registration* with its handler wrapped in a span."""
        stage, phase = registration.stage, registration.phase
        name = f"middleware {stage!r}.{phase.value}"
        handler_name = describe_handler(registration.handler)
        attributes = {n.STAGE: stage.name, n.PHASE: phase.value, n.HANDLER: handler_name}
        traced: Callable[..., Any]
        if phase is Phase.WRAP:
            traced = self._wrap(registration.handler, name, attributes)
        else:
            traced = self._call(registration.handler, name, attributes)
        # The chain's error messages name the handler, traced or not.
        traced.__qualname__ = handler_name
        return MiddlewareRegistration(
            stage=stage, phase=phase, handler=traced, is_async=phase is not Phase.WRAP
        )

    def _call(
        self, handler: Callable[[Any], Any], name: str, attributes: dict[str, str]
    ) -> Callable[[Any], Any]:
        async def traced(argument: Any) -> Any:
            span = self.tracer.start_span(name, attributes=attributes)
            token = otel_context.attach(trace.set_span_in_context(span))
            error: BaseException | None = None
            try:
                returned = handler(argument)
                if inspect.isawaitable(returned):
                    returned = await returned
                return returned
            except BaseException as raised:
                error = raised
                raise
            finally:
                otel_context.detach(token)
                end_span(span, error)

        return traced

    def _wrap(
        self,
        handler: Callable[[Any, Any], AsyncGenerator[Any, None]],
        name: str,
        attributes: dict[str, str],
    ) -> Callable[[Any, Any], AsyncGenerator[Any, None]]:
        async def traced(context: Any, next_fn: Any) -> AsyncGenerator[Any, None]:
            span = self.tracer.start_span(name, attributes=attributes)
            error: BaseException | None = None
            try:
                async with aclosing(handler(context, next_fn)) as events:
                    async for event in events:
                        yield event
            except BaseException as raised:
                error = raised
                raise
            finally:
                end_span(span, error)

        return traced
