"""Cedar policies as a policy middleware, for policy teams that write Cedar, not Python.

Install the ``cedar`` extra (``pip install 'stageware[cedar]'``). ``cedar_policy``
decides tool calls (``tool.before``), model routing (``route.select``) and input
(``input.received``) with Cedar policies, for the ``Principal`` the application passes
with each run; ``schema_for`` gives the Cedar schema the policies are validated against.
``docs/guides/cedar.md`` is the guide.
"""

from stageware._cedar._middleware import CedarEvaluationError, CedarSettings, cedar_policy
from stageware._cedar._policies import CedarPolicyError
from stageware._cedar._schema import schema_for

__all__ = [
    "CedarEvaluationError",
    "CedarPolicyError",
    "CedarSettings",
    "cedar_policy",
    "schema_for",
]
