"""The policy layer's namespace: hook points, bands, directions and hook events.

"Hook" here is the policy layer's word: a hook point (``tool.before``) is a stage, a
phase and a direction where declared policy middleware runs. It is not a lifecycle hook
(``agent.add_hook``). The hook events live here, apart from ``stageware``, because some
share a name with a stage event: ``stageware.policy.ToolResultEvent`` is the pydantic
payload of the ``tool.after`` hook point, while ``stageware.ToolResultEvent`` is the
ExecuteTool stage's result event.
"""

from stageware._generated import policy_points as _policy_points
from stageware._generated.policy_points import *  # noqa: F403 - the module's __all__ is the list

__all__: list[str] = []
__all__ += _policy_points.__all__
