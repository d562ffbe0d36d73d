"""The tests ``--stageware-conformance`` adds: a pytest item per ``ConformanceCase``.

Loaded by the plugin only when the option is given, so a test session that does not ask
for the suite never imports hypothesis or the policy layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ._cases import ConformanceCase, cases_of
from ._failures import ConformanceError
from ._suite import DEFAULT_EXAMPLES, Backend

__all__ = ["ConformanceItem", "plugin_items"]


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


def plugin_items(
    session: pytest.Session,
    namespaces: Sequence[str],
    backends: Sequence[str],
    examples: int | None,
) -> list[ConformanceItem]:
    """An item per middleware, hook and backend of the plugins named by *namespaces*.

    Raises:
        pytest.UsageError: If a namespace is not installed or does not hold middleware.
    """
    try:
        cases = cases_of(
            namespaces,
            backends=[_backend(name) for name in backends],
            examples=DEFAULT_EXAMPLES if examples is None else examples,
        )
    except (LookupError, TypeError, ValueError) as error:
        raise pytest.UsageError(f"--stageware-conformance: {error}") from error
    return [
        ConformanceItem.from_parent(  # pyright: ignore[reportUnknownMemberType] - pytest's own
            session, name=f"stageware-conformance[{case.id}]", case=case
        )
        for case in cases
    ]


def _backend(name: str) -> Backend:
    if name == "asyncio":
        return "asyncio"
    if name == "trio":
        return "trio"
    raise ValueError(f"unknown backend {name!r}; choose asyncio or trio")
