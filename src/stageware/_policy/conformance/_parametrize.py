"""``conformance_test(...)``: the suite as a parametrized test in the author's own module.

pytest is imported when the function is called, not when the module is: the function API
(``check_middleware``) works without pytest installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

from pydantic import BaseModel

from stageware._policy._declare import MiddlewareDef

from ._cases import ConformanceCase, cases_of
from ._suite import DEFAULT_EXAMPLES, Backend

__all__ = ["conformance_test"]


def conformance_test(
    *sources: MiddlewareDef | ModuleType | str,
    examples: int = DEFAULT_EXAMPLES,
    backends: Sequence[Backend] = ("asyncio",),
    events: Iterable[BaseModel] = (),
) -> Callable[[ConformanceCase], None]:
    """A pytest test function running the suite on *sources*, one test per middleware and
    hook point (and backend); assign it to a ``test_`` name in a test module.

    Each source is a declared middleware, a module (every middleware it declares at its
    top level) or the namespace of an installed plugin (``"acme"``: every middleware the
    plugin contributes through its ``stageware.middleware`` entry point). *events* are
    fed first, each to the middleware that declare its hook point.

    Raises:
        ValueError: If the sources hold no middleware.
        LookupError: For a namespace no installed plugin contributes.
    """
    import pytest

    cases = cases_of(sources, backends=backends, examples=examples, events=events)

    @pytest.mark.parametrize("stageware_case", cases, ids=[case.id for case in cases])
    def test_conformance(stageware_case: ConformanceCase) -> None:
        __tracebackhide__ = True
        stageware_case.run()

    return test_conformance
