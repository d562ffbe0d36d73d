"""Tracing an agent's invocations with OpenTelemetry, when the application asked for it.

Whether an invocation is traced is decided when it starts, and costs nothing when it is
not: with no ``Agent(tracer_provider=...)``, an application that never imported
``opentelemetry.trace`` cannot have configured a provider, so the check is one lookup in
``sys.modules`` and nothing is imported; one that imported it but left the API's default
(proxy or no-op) provider in place is not traced either. Only a traced invocation loads
``_spans`` and ``_handlers``, the modules that import OpenTelemetry, and creates spans.

A traced invocation runs its stages through an instrumented copy of the agent's registry
(``MiddlewareRegistry.instrumented``), whose handlers are wrapped in spans and whose
chains are cached apart; the untraced chains carry no check for tracing.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from stageware._host._core import AgentCore
    from stageware._runtime import MiddlewareRegistry

    from ._handlers import HandlerSpans
    from ._spans import InvocationTrace

__all__ = ["Tracing"]


@final
class Tracing:
    """Where an agent's spans go: an explicit provider, or the global one once configured.

    Args:
        provider: The tracer provider to use whatever the global one is; ``None`` to use
            the global provider when the application set one.
    """

    __slots__ = ("_handler_spans", "_registry", "provider")

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self.provider: TracerProvider | None = provider
        # Built on the first traced invocation, then kept: the instrumented registry
        # follows the agent's, and its chains are cached like the agent's own.
        self._handler_spans: HandlerSpans | None = None
        self._registry: MiddlewareRegistry | None = None

    def start(self, core: AgentCore) -> InvocationTrace | None:
        """The trace of an invocation about to start, or ``None`` when it is not traced."""
        provider = self.provider
        if provider is None:
            api = sys.modules.get("opentelemetry.trace")
            if api is None:
                return None
            provider = api.get_tracer_provider()
            if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
                return None
        from ._handlers import HandlerSpans
        from ._spans import InvocationTrace, tracer_of

        tracer = tracer_of(provider)
        if self._handler_spans is None or self._registry is None:
            self._handler_spans = HandlerSpans(tracer)
            self._registry = core.registry.instrumented(self._handler_spans.instrument)
        self._handler_spans.tracer = tracer
        return InvocationTrace(tracer, self._registry, core)
