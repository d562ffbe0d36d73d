"""Cedar policies as a policy middleware, for policy teams that write Cedar, not Python.

Install the ``cedar`` extra (``pip install 'stageware[cedar]'``). ``cedar_policy``
decides tool calls (``tool.before``), model routing (``route.select``) and input
(``input.received``) with Cedar policies, for the ``Principal`` the application passes
with each run; ``schema_for`` gives the Cedar schema the policies are validated against.
``docs/guides/cedar.md`` is the guide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stageware._cedar._middleware import (
    CedarEvaluationError,
    CedarSettings,
    cedar_policy,
    tool_specs,
)
from stageware._cedar._policies import CedarPolicyError
from stageware._cedar._schema import PolicySchema

__all__ = [
    "CedarEvaluationError",
    "CedarPolicyError",
    "CedarSettings",
    "cedar_policy",
    "schema_for",
]


def schema_for(
    tools: str | Iterable[object] = (),
    *,
    principal_attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Cedar schema (JSON format) that ``cedar_policy`` validates policies against.

    Args:
        tools: The tools whose calls policies may name: tools (``@tool`` functions, any
            ``AgentTool``), their ``tool_spec`` dictionaries, or
            ``"package.module:attribute"`` naming such a list.
        principal_attributes: JSON Schema of the ``Principal``'s attributes (an object
            with ``properties``), as in ``CedarSettings``.

    Returns:
        The schema as Cedar's JSON schema format, ready for ``json.dumps`` and for Cedar's
        own tools (``cedar validate --schema-format json``).

    Raises:
        TypeError: A tool that is neither a tool nor a tool specification.
        ValueError: A reference that names nothing, two tools with one name, or
            attributes that are not an object schema.
    """
    return PolicySchema(tool_specs(tools), principal_attributes).json()
