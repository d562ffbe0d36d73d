"""Cedar policies as a policy middleware, for policy teams that write Cedar, not Python.

Install the ``cedar`` extra (``pip install -e '.[cedar]'`` in a clone). ``cedar_policy``
decides tool calls (``tool.before``), model routing (``route.select``) and input
(``input.received``) with Cedar policies, for the ``Principal`` the application passes
with each run; ``schema_for`` gives the Cedar schema the policies are validated against.
``docs/guides/cedar.md`` is the guide.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._cedar._middleware import CedarEvaluationError, CedarSettings, cedar_policy
    from stageware._cedar._policies import CedarPolicyError
    from stageware._cedar._schema import schema_for
except ModuleNotFoundError as _missing:
    # Only a missing cedarpy gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] != "cedarpy":
        raise
    raise ImportError(
        f"stageware.cedar needs the 'cedarpy' package, from {_extras.needs_extra('cedar')}"
    ) from _missing

__all__ = [
    "CedarEvaluationError",
    "CedarPolicyError",
    "CedarSettings",
    "cedar_policy",
    "schema_for",
]
