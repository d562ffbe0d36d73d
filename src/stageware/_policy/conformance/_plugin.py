"""The suite's pytest plugin: the ``--stageware-conformance`` options and their tests.

It is opt-in (``-p stageware.conformance.plugin``), not registered through a ``pytest11``
entry point: pytest rewrites the asserts of every module of a distribution that registers
one, so every test session of every project with stageware installed would import
stageware rewritten. Asked for, it adds a test per middleware, hook point and event loop
for every middleware the installed plugins named on the command line contribute.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._cases import ConformanceCase, cases_of
from ._failures import ConformanceError
from ._suite import DEFAULT_EXAMPLES, Backend

__all__ = ["ConformanceItem", "pytest_addoption", "pytest_collection_modifyitems"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stageware", "stageware policy conformance suite")
    group.addoption(
        "--stageware-conformance",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="run the conformance suite on every middleware the installed plugin NAMESPACE "
        "contributes (entry point group stageware.middleware); repeat, or separate with "
        "commas, for several plugins",
    )
    group.addoption(
        "--stageware-conformance-examples",
        type=int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"events per hook point (default {DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--stageware-conformance-backend",
        action="append",
        choices=["asyncio", "trio"],
        default=[],
        help="event loop to run the middleware on; repeat for both (default asyncio)",
    )


# Before -k and -m deselect, so that they select among the suite's tests too.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    given: list[str] = config.getoption("stageware_conformance") or []
    namespaces = [name.strip() for value in given for name in value.split(",") if name.strip()]
    if not namespaces:
        return
    backends: list[str] = config.getoption("stageware_conformance_backend") or ["asyncio"]
    option = config.getoption("stageware_conformance_examples")
    examples = option if isinstance(option, int) else DEFAULT_EXAMPLES
    try:
        cases = cases_of(
            namespaces, backends=[_backend(name) for name in backends], examples=examples
        )
    except (LookupError, TypeError, ValueError) as error:
        raise pytest.UsageError(f"--stageware-conformance: {error}") from error
    items.extend(
        ConformanceItem.from_parent(  # pyright: ignore[reportUnknownMemberType] - pytest's own
            session, name=f"stageware-conformance[{case.id}]", case=case
        )
        for case in cases
    )


class ConformanceItem(pytest.Item):
    """One case of the suite, as a test of the session."""

    def __init__(self, *, case: ConformanceCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType] - pytest's own
        self.case = case

    def runtest(self) -> None:
        self.case.run()

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        # The failures say all there is to say; the suite's own frames would only hide them.
        if isinstance(excinfo.value, ConformanceError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"stageware conformance: {self.case.id}"


def _backend(name: str) -> Backend:
    if name == "asyncio":
        return "asyncio"
    if name == "trio":
        return "trio"
    raise ValueError(f"unknown backend {name!r}; choose asyncio or trio")
