"""The conformance suite's pytest plugin, opt-in: ``pytest -p stageware.conformance.plugin``.

It adds ``--stageware-conformance=NAMESPACE`` (a test per middleware and hook point of
every middleware the installed plugin NAMESPACE contributes),
``--stageware-conformance-backend=asyncio|trio`` and ``--stageware-conformance-examples=N``.
To have it in every run of a project, name it in the pytest configuration
(``addopts = ["-p", "stageware.conformance.plugin"]``) or in the top-level
``conftest.py`` (``pytest_plugins = ["stageware.conformance.plugin"]``).
"""

from stageware._policy.conformance._plugin import (
    ConformanceItem,
    pytest_addoption,
    pytest_collection_modifyitems,
)

__all__ = ["ConformanceItem", "pytest_addoption", "pytest_collection_modifyitems"]
