"""One tool of an MCP server, as an ``AgentTool`` the agent runs like any other.

It runs through the ExecuteTool chain, so middleware and policies (``tool.before``,
``tool.after``) see and govern it as they do a ``@tool``. Whatever goes wrong on the way
to the server and back ends as an error result for the model that names the server and
the tool, never as a hang: a JSON-RPC error, a timeout, a server that exited mid-call (its
connection closes, and the SDK fails the waiting call at once) or before it, a closed
client.
Cancellation is not a result: it propagates, and the call is cancelled on the server too.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol, cast, final

import mcp_types
from mcp.shared.exceptions import MCPError

from stageware._generated.events import ExecuteToolEvent, ToolResultEvent
from stageware._generated.payloads import ToolSpec, ToolUse

from ._context import ToolContext
from ._mcp_errors import MCPConnectionError, MCPUnavailableError
from ._mcp_results import tool_result
from ._results import error_result

__all__ = ["MCPTool", "ToolCaller"]


class ToolCaller(Protocol):
    """The client side a tool calls through: ``MCPClient``."""

    @property
    def label(self) -> str:
        """The server, as messages name it (no secrets)."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call the server's tool *name* from the caller's event loop."""
        ...


@final
class MCPTool:
    """A tool an MCP server lists, under the name the agent offers it by.

    Attributes:
        server_tool_name: The tool's name on the server (``tool_name`` may carry the
            client's prefix).
    """

    __slots__ = ("_caller", "_max_result_chars", "_spec", "server_tool_name")

    def __init__(
        self,
        caller: ToolCaller,
        tool: mcp_types.Tool,
        *,
        prefix: str | None,
        max_result_chars: int | None = None,
    ) -> None:
        self._caller = caller
        self._max_result_chars = max_result_chars
        self.server_tool_name: str = tool.name
        name = tool.name if prefix is None else f"{prefix}_{tool.name}"
        # Bedrock and Anthropic refuse an empty description; the title is the next best.
        description = tool.description or tool.title or f"The {tool.name} tool."
        self._spec: ToolSpec = {
            "name": name,
            "description": description,
            "inputSchema": {"json": dict(tool.input_schema)},
        }

    @property
    def tool_name(self) -> str:
        """The name the model calls the tool by."""
        return self._spec["name"]

    @property
    def tool_spec(self) -> ToolSpec:
        """The spec as the server listed it (shared: copy it before changing it)."""
        return self._spec

    async def stream(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncGenerator[ExecuteToolEvent, None]:
        """Call the tool on the server and yield its result."""
        tool_use_id = tool_use["toolUseId"]
        arguments: object = tool_use["input"]
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            yield ToolResultEvent(
                tool_result=error_result(
                    tool_use_id,
                    f"Error: the input of {self.tool_name} must be a JSON object, "
                    f"got {type(arguments).__name__}",
                )
            )
            return
        where = f"tool {self.server_tool_name!r} of MCP server {self._caller.label}"
        try:
            result = await self._caller.call_tool(
                self.server_tool_name, dict(cast(Mapping[str, Any], arguments))
            )
        except MCPUnavailableError as error:
            yield _failed(tool_use_id, f"Error: {where} cannot run: {error.reason}", error)
            return
        except MCPConnectionError as error:
            yield _failed(tool_use_id, f"Error: {where} cannot run: {error}", error)
            return
        except MCPError as error:
            yield _failed(tool_use_id, f"Error: {where} failed: {_describe(error)}", error)
            return
        except Exception as error:
            text = f"Error: {where} failed: {type(error).__name__}: {error}"
            yield _failed(tool_use_id, text, error)
            return
        yield ToolResultEvent(
            tool_result=tool_result(tool_use_id, result, max_chars=self._max_result_chars)
        )

    def __repr__(self) -> str:
        return f"MCPTool({self.tool_name!r}, server={self._caller.label})"


def _describe(error: MCPError) -> str:
    if error.code == mcp_types.CONNECTION_CLOSED:
        return "the connection closed before it answered (the server exited or dropped it)"
    if error.code == mcp_types.REQUEST_TIMEOUT:
        return f"no answer in time ({error.message})"
    return f"the server answered with error {error.code}: {error.message}"


def _failed(tool_use_id: str, text: str, error: Exception) -> ToolResultEvent:
    return ToolResultEvent(tool_result=error_result(tool_use_id, text), exception=error)
