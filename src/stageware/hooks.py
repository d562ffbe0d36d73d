"""Policy hook points, bands and hook event models.

Hook events live in this namespace of their own because some share a name with a stage
event: ``stageware.hooks.ToolResultEvent`` is the pydantic payload of the ``tool.after``
hook point, while ``stageware.ToolResultEvent`` is the ExecuteTool stage's result event.
"""

from stageware._generated import hooks as _generated_hooks
from stageware._generated.hooks import *  # noqa: F403 - the generated module's __all__ is the list

__all__: list[str] = []
__all__ += _generated_hooks.__all__
