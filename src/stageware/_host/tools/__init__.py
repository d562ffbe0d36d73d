"""Tools: the ``AgentTool`` protocol, what a tool receives, and ``@tool``.

- ``_protocol``: ``AgentTool``; ``_context``: ``ToolContext`` and tool interrupt ids.
- ``_decorator``: ``@tool`` and ``FunctionTool``, and its spec uncopied for the host;
  ``_spec``: the spec built from a function's signature and docstring.
- ``_results``: the error results the host gives the model, and the check of a result.
"""

from ._context import ToolContext, tool_interrupt_id
from ._decorator import FunctionTool, fixed_tool_spec, tool
from ._protocol import AgentTool
from ._results import error_result, exception_result, invalid_result_reason

__all__ = [
    "AgentTool",
    "FunctionTool",
    "ToolContext",
    "error_result",
    "exception_result",
    "fixed_tool_spec",
    "invalid_result_reason",
    "tool",
    "tool_interrupt_id",
]
