"""``ConformanceCase``: one pytest test of the suite, a middleware at one hook on one loop.

Both ways of running the suite under pytest (``conformance_test(...)`` in a test module,
``--stageware-conformance`` on the command line) expand middleware into these cases, so
they name their tests alike: ``acme.no_weekend_refunds-tool.before``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import final

from pydantic import BaseModel

from stageware._generated.policy_points import HOOK_POINTS, HookPoint
from stageware._policy._declare import MiddlewareDef

from ._discover import module_middleware, plugin_middleware
from ._suite import DEFAULT_EXAMPLES, Backend, assert_conforms

__all__ = ["ConformanceCase", "cases_of"]


@final
@dataclass(frozen=True, slots=True)
class ConformanceCase:
    """A middleware to check at one of its hook points, on one event loop.

    Attributes:
        middleware: The declared middleware.
        hook: The hook point to check it at.
        backend: The event loop to run it on.
        examples: How many events to generate.
        events: Events to feed it first (those of other hooks are left out).
    """

    middleware: MiddlewareDef
    hook: HookPoint
    backend: Backend = "asyncio"
    examples: int = DEFAULT_EXAMPLES
    events: tuple[BaseModel, ...] = ()

    @property
    def id(self) -> str:
        """The test's id: ``acme.no_weekend_refunds-tool.before-trio``."""
        suffix = "" if self.backend == "asyncio" else f"-{self.backend}"
        return f"{self.middleware.name}-{self.hook}{suffix}"

    def run(self) -> None:
        """Run the suite for this case.

        Raises:
            ConformanceError: Listing what was found wrong.
        """
        __tracebackhide__ = True
        assert_conforms(
            self.middleware,
            hooks=[self.hook],
            backend=self.backend,
            examples=self.examples,
            events=[event for event in self.events if HOOK_POINTS[self.hook].event is type(event)],
        )


def cases_of(
    sources: Iterable[MiddlewareDef | ModuleType | str],
    *,
    backends: Sequence[Backend],
    examples: int,
    events: Iterable[BaseModel] = (),
) -> list[ConformanceCase]:
    """A case per middleware, hook and backend.

    Each source is a declared middleware, a module (the middleware it exports) or the
    namespace of an installed plugin (the middleware it contributes).

    Raises:
        ValueError: If the sources hold no middleware, no backend is given, or *examples*
            is below 1.
        LookupError: For a namespace no installed plugin contributes.
    """
    if not backends:
        raise ValueError("name at least one backend: 'asyncio' or 'trio'")
    if examples < 1:
        raise ValueError(f"examples must be at least 1, got {examples}")
    definitions: list[MiddlewareDef] = []
    for source in sources:
        if isinstance(source, MiddlewareDef):
            definitions.append(source)
        elif isinstance(source, ModuleType):
            definitions.extend(module_middleware(source))
        else:
            definitions.extend(plugin_middleware(source))
    if not definitions:
        raise ValueError("no middleware to check: the sources given declare none")
    given = tuple(events)
    return [
        ConformanceCase(definition, point, backend, examples, given)
        for definition in definitions
        for point in definition.hooks
        for backend in backends
    ]
