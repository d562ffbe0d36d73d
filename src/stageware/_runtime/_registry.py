"""The middleware registry: handlers per stage, and their composed chains.

A registry is what a host embeds. Handlers are added with the typed
``add_middleware`` overloads it inherits from the ``MiddlewareHost``; the
host then runs each stage through ``compose()`` or ``invoke()``. Composed chains are
cached and reused until a handler is added to that stage, so the per-call cost of a
stage is one closure lookup, and a stage without handlers costs nothing beyond its
terminal. What a host can rely on from a running chain (``_chain`` has the details):

- With Output handlers, the transformed result is the last event; a result a retrying
  Wrap handler superseded never reaches the host.
- A stream a Wrap handler stopped reading is closed when that handler finishes.
- An ``InterruptException`` from ``context.interrupt()`` reaches the host even when a
  middleware caught it: the call's terminal does not run, and the original exception is
  raised (with a ``SwallowedInterruptWarning``). The host registers it as usual.

Per call, n Wrap handlers cost 2n generators (one around each handler but the outermost,
whose layer also runs the Input and Output handlers); ``invoke()`` adds one more.

A host that observes its handlers (tracing, say) runs a stage through an
``instrumented()`` registry instead: the same handlers, each rewritten once, with chains
cached apart, so this registry's chains carry no instrumentation and no check for it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, TypeAlias, TypeVar, final

from ._chain import ResultTracker, StagePlan, build_chain, close_all
from ._middleware_host import MiddlewareHost
from ._stage import MiddlewareStage, Phase
from ._validation import MiddlewareRegistration

__all__ = ["Instrument", "MiddlewareRegistry"]

C = TypeVar("C")
E = TypeVar("E")

Instrument: TypeAlias = Callable[[MiddlewareRegistration], MiddlewareRegistration]
"""Rewrites a registration for ``MiddlewareRegistry.instrumented()``."""


@final
class MiddlewareRegistry(MiddlewareHost):
    """Holds the middleware of one host and runs stages through it.

    Example::

        registry = MiddlewareRegistry()
        registry.add_middleware(
            InvokeModelStage.Input, lambda ctx: ctx.replace(system_prompt="Be brief.")
        )
        async for event in registry.invoke(InvokeModelStage, context, call_model):
            ...
    """

    __slots__ = ("_chains", "_instrumented", "_plans")

    def __init__(self) -> None:
        self._plans: dict[MiddlewareStage[Any, Any, Any], StagePlan] = {}
        # One composed chain per stage, remembered with the terminal it was built for.
        self._chains: dict[
            MiddlewareStage[Any, Any, Any], tuple[object, Callable[[Any], AsyncIterator[Any]]]
        ] = {}
        self._instrumented: list[tuple[MiddlewareRegistry, Instrument]] = []

    def _register_middleware(self, registration: MiddlewareRegistration) -> None:
        self.add_registration(registration)

    def add_registration(self, registration: MiddlewareRegistration) -> None:
        """Add a registration that ``add_middleware`` has already validated.

        A host that embeds this registry and inherits ``MiddlewareHost`` itself forwards
        its own validated registrations here.
        """
        stage = registration.stage
        self._plans[stage] = self._plans.get(stage, StagePlan()).with_registration(registration)
        self._chains.pop(stage, None)
        for registry, instrument in self._instrumented:
            registry.add_registration(instrument(registration))

    def instrumented(self, instrument: Instrument) -> MiddlewareRegistry:
        """A registry that runs the handlers of this one as *instrument* rewrites them.

        *instrument* is called once per registration, for those added so far and for every
        one added to this registry later, and returns the registration to run instead (its
        handler wrapped, typically). The instrumented registry composes and caches chains
        of its own; this registry's chains are left as they are.
        """
        registry = MiddlewareRegistry()
        for plan in self._plans.values():
            for registration in (*plan.inputs, *plan.wraps, *plan.outputs):
                registry.add_registration(instrument(registration))
        self._instrumented.append((registry, instrument))
        return registry

    def handlers(
        self, stage: MiddlewareStage[Any, Any, Any]
    ) -> dict[Phase, tuple[Callable[..., Any], ...]]:
        """The handlers registered on *stage*, per phase, in registration order."""
        plan = self._plans.get(stage, StagePlan())
        return {
            Phase.INPUT: tuple(r.handler for r in plan.inputs),
            Phase.WRAP: tuple(r.handler for r in plan.wraps),
            Phase.OUTPUT: tuple(r.handler for r in plan.outputs),
        }

    def compose(
        self,
        stage: MiddlewareStage[C, Any, E],
        terminal: Callable[[C], AsyncIterator[E]],
    ) -> Callable[[C], AsyncIterator[E]]:
        """Return *terminal* wrapped in the handlers registered on *stage*.

        Calling the result with a context returns an async iterator of the stage's events.
        With no handlers on *stage*, *terminal* itself is returned. Composing again with the
        same terminal returns the same chain until a handler is added to *stage*.
        *terminal* may return any async iterator; a Wrap handler's ``next_fn`` hands it
        over as an async generator.
        """
        cached = self._chains.get(stage)
        # Equality, not identity: `host.method` is a new bound-method object on every
        # access, and bound methods of the same function and instance compare equal.
        if cached is not None and cached[0] == terminal:
            return cached[1]
        plan = self._plans.get(stage)
        chain = terminal if plan is None else build_chain(stage, plan, terminal)
        self._chains[stage] = (terminal, chain)
        return chain

    async def invoke(
        self,
        stage: MiddlewareStage[C, Any, E],
        context: C,
        terminal: Callable[[C], AsyncIterator[E]],
    ) -> AsyncGenerator[E, None]:
        """Run *stage* on *context*, yielding its events.

        A chain that ends on an interrupt event (a truthy ``is_interrupt``, such as a
        tool's ``ToolInterruptEvent``) without a result is a halted call, not an error: the
        host registers the interrupts. Unlike ``compose()``, this adds one generator layer
        even to a stage without handlers, to check the result.

        Raises:
            RuntimeError: If the chain finishes without yielding the stage's result event
                and without an interrupt event.
            InterruptException: When a middleware's ``context.interrupt()`` raised, whether
                or not the middleware caught it.
        """
        tracker = ResultTracker(stage)
        events = self.compose(stage, terminal)(context)
        try:
            async for event in events:
                tracker.see(event)
                yield event
        finally:
            await close_all([events])
        tracker.check()
