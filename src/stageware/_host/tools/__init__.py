"""Tools: the ``AgentTool`` protocol, what a tool receives, and ``@tool``.

- ``_protocol``: ``AgentTool``; ``_context``: ``ToolContext`` and tool interrupt ids.
- ``_decorator``: ``@tool`` and ``FunctionTool``, and its spec uncopied for the host;
  ``_spec``: the spec built from a function's signature and docstring.
- ``_results``: the error results the host gives the model, and the check of a result.
- ``_provider``: ``ToolProvider``, a source of tools that may change while an agent runs,
  and ``RefreshingToolProvider``, one the agent awaits before each model call.
- ``_mcp_*``: an MCP server's tools (public as ``stageware.mcp``; needs the ``mcp`` extra,
  so nothing here imports them): ``_mcp_client`` the client and its lifetime,
  ``_mcp_thread`` the event loop its session lives in, ``_mcp_tool`` one server tool as
  an ``AgentTool``, ``_mcp_results`` what a server answers, as a tool result,
  ``_mcp_errors`` the client's own errors, ``_mcp_transport`` a transport whose end
  (the server exited) the client sees.
"""

from ._context import ToolContext, tool_interrupt_id
from ._decorator import FunctionTool, fixed_tool_spec, tool
from ._protocol import AgentTool
from ._provider import RefreshingToolProvider, ToolProvider
from ._results import error_result, exception_result, invalid_result_reason

__all__ = [
    "AgentTool",
    "FunctionTool",
    "RefreshingToolProvider",
    "ToolContext",
    "ToolProvider",
    "error_result",
    "exception_result",
    "fixed_tool_spec",
    "invalid_result_reason",
    "tool",
    "tool_interrupt_id",
]
