"""The pytest plugin stageware registers (entry point ``pytest11``, name
``stageware_conformance``): the ``--stageware-conformance`` options.

pytest loads it in every session wherever stageware is installed, so it costs an option
group and nothing else: the suite, hypothesis and the policy layer are imported only when
``--stageware-conformance`` is given. ``-p no:stageware_conformance`` turns it off.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption", "pytest_collection_modifyitems"]


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
        default=None,
        metavar="N",
        help="events per hook point (default: stageware.conformance.DEFAULT_EXAMPLES)",
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
    from ._items import plugin_items

    backends: list[str] = config.getoption("stageware_conformance_backend") or ["asyncio"]
    examples: int | None = config.getoption("stageware_conformance_examples")
    items.extend(plugin_items(session, namespaces, backends, examples))
