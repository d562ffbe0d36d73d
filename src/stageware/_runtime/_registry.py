"""The middleware registry: handlers per stage, and their composed chains.

A registry is what a host embeds. Handlers are added with the typed
``add_middleware`` overloads it inherits from the ``MiddlewareHost``; the
host then runs each stage through ``compose()`` or ``invoke()``. Composed chains are
cached and reused until a handler is added to that stage, so the per-call cost of a
stage is one closure lookup, and a stage without handlers costs nothing beyond its
terminal. What a host can rely on from a running chain (``_chain`` has the details):

- With Output handlers, the transformed result is the last event; a result a retrying
  Wrap handler superseded never reaches the host.
- A stream a Wrap handler stopped reading is closed when the chain finishes.
- An ``InterruptException`` from ``context.interrupt()`` reaches the host even when a
  middleware caught it: the call's terminal does not run, and the original exception is
  raised (with a ``SwallowedInterruptWarning``). The host registers it as usual.

Per call, n Wrap handlers cost n + 1 generators: their own, and the outermost layer's,
which also runs the Input and Output handlers. ``invoke()`` adds nothing: its result
check runs in the outermost layer, and a stage without handlers is its terminal.

A registry made for a fixed set of stages (``stages=``; the agent's is) refuses a handler
on any other at registration: a token of a same-named stage from another generated
package looks right to both checkers, and its handler would never run.

A host that observes its handlers (tracing, say) runs a stage through an
``instrumented()`` registry instead: the same handlers, each rewritten once, with chains
cached apart, so this registry's chains carry no instrumentation and no check for it.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from typing import Any, TypeAlias, TypeVar, cast, final

from ._chain import ASYNC_GENERATOR, StagePlan, as_generator, build_chain
from ._middleware_host import MiddlewareHost
from ._stage import MiddlewareStage, Phase
from ._validation import MiddlewareRegistration, unknown_stage_error

__all__ = ["Instrument", "MiddlewareRegistry"]

C = TypeVar("C")
E = TypeVar("E")

Instrument: TypeAlias = Callable[[MiddlewareRegistration], MiddlewareRegistration]
"""Rewrites a registration for ``MiddlewareRegistry.instrumented()``."""


@final
class MiddlewareRegistry(MiddlewareHost):
    """Holds the middleware of one host and runs stages through it.

    Example:
        ```python
        registry = MiddlewareRegistry()
        registry.add_middleware(
            InvokeModelStage.Input, lambda ctx: ctx.replace(system_prompt="Be brief.")
        )
        async for event in registry.invoke(InvokeModelStage, context, call_model):
            ...
        ```

    Args:
        stages: The stages this registry runs, when the host runs a fixed set: a handler on
            any other stage is refused at registration with a ``TypeError``. By default any
            stage is accepted, for a harness that declares stages as it goes.
    """

    __slots__ = ("__weakref__", "_chains", "_checked", "_instrumented", "_plans", "_stages")

    def __init__(self, *, stages: Iterable[MiddlewareStage[Any, Any, Any]] | None = None) -> None:
        self._stages = None if stages is None else tuple(stages)
        self._plans: dict[MiddlewareStage[Any, Any, Any], StagePlan] = {}
        # One composed chain per stage, remembered with the terminal it was built for.
        self._chains: dict[
            MiddlewareStage[Any, Any, Any], tuple[object, Callable[[Any], AsyncIterator[Any]]]
        ] = {}
        # The same for invoke(), whose chains also check that the result came through.
        self._checked: dict[
            MiddlewareStage[Any, Any, Any], tuple[object, Callable[[Any], AsyncIterator[Any]]]
        ] = {}
        # Held weakly: an instrumented registry its host dropped must not be kept, nor fed.
        self._instrumented: list[tuple[weakref.ref[MiddlewareRegistry], Instrument]] = []

    def _register_middleware(self, registration: MiddlewareRegistration) -> None:
        self.add_registration(registration)

    def add_registration(self, registration: MiddlewareRegistration) -> None:
        """Add a registration that ``add_middleware`` has already validated.

        A host that embeds this registry and inherits ``MiddlewareHost`` itself forwards
        its own validated registrations here.

        Raises:
            TypeError: The registry was made for a fixed set of stages (``stages=``), and
                *registration* is for another one.
        """
        stage = registration.stage
        # By identity: a same-named stage of another package is another stage.
        if self._stages is not None and not any(stage is known for known in self._stages):
            raise unknown_stage_error(registration, self._stages)
        self._plans[stage] = self._plans.get(stage, StagePlan()).with_registration(registration)
        self._chains.pop(stage, None)
        self._checked.pop(stage, None)
        self._instrumented = [(ref, fn) for ref, fn in self._instrumented if ref() is not None]
        for ref, instrument in self._instrumented:
            mirror = ref()
            if mirror is not None:
                mirror.add_registration(instrument(registration))

    def instrumented(self, instrument: Instrument) -> MiddlewareRegistry:
        """A registry that runs the handlers of this one as *instrument* rewrites them.

        *instrument* is called once per registration, for those added so far and for every
        one added to this registry later, and returns the registration to run instead (its
        handler wrapped, typically). The instrumented registry composes and caches chains
        of its own; this registry's chains are left as they are. This registry holds it
        only weakly, so one its host no longer holds is forgotten.
        """
        registry = MiddlewareRegistry()
        for plan in self._plans.values():
            for registration in (*plan.inputs, *plan.wraps, *plan.outputs):
                registry.add_registration(instrument(registration))
        self._instrumented.append((weakref.ref(registry), instrument))
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

    def sees_context(self, stage: MiddlewareStage[Any, Any, Any]) -> bool:
        """Whether a handler that sees *stage*'s context is registered: Input or Wrap.

        A host asks before building a context: where no handler can see it, the copies its
        copy rules make protect nothing, and can be skipped. Output handlers see only the
        result.
        """
        plan = self._plans.get(stage)
        return plan is not None and bool(plan.inputs or plan.wraps)

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

    def invoke(
        self,
        stage: MiddlewareStage[C, Any, E],
        context: C,
        terminal: Callable[[C], AsyncIterator[E]],
    ) -> AsyncGenerator[E, None]:
        """Run *stage* on *context*, returning the async generator of its events.

        Unlike ``compose()``, the chain is checked: a chain that ends without the stage's
        result event raises, because a handler dropped it. One that ends on an interrupt
        event (a truthy ``is_interrupt``, such as a tool's ``ToolInterruptEvent``) without
        a result is a halted call, not an error: the host registers the interrupts. A
        stage without handlers runs its terminal as it is, unchecked and at no cost: the
        terminal is the host's own, and the check guards against middleware. (So
        *terminal* is called by ``invoke()`` itself, not on the first step of the stream:
        a terminal that does work when called, rather than when iterated, does it then.)

        Raises:
            RuntimeError: If a handler's chain finishes without yielding the stage's result
                event and without an interrupt event.
            InterruptException: When a middleware's ``context.interrupt()`` raised, whether
                or not the middleware caught it.
        """
        # `in` rather than `get()`: no method call, on the path that costs nothing else.
        if stage not in self._plans:
            events = terminal(context)
            if type(events) is ASYNC_GENERATOR:
                return events
            return as_generator(events)
        cached = self._checked.get(stage)
        if cached is None or cached[0] != terminal:
            plan = self._plans[stage]
            cached = (terminal, build_chain(stage, plan, terminal, checked=True))
            self._checked[stage] = cached
        return cast("AsyncGenerator[E, None]", cached[1](context))
