"""The errors an MCP client raises of its own (the SDK's ``MCPError`` is the server's)."""

from __future__ import annotations

from typing import final

__all__ = ["MCPConnectionError", "MCPUnavailableError"]


class MCPConnectionError(RuntimeError):
    """An MCP server could not be reached, its session could not be opened, or is closed."""


@final
class MCPUnavailableError(MCPConnectionError):
    """A call found no session: the client is closed, or its server exited.

    Attributes:
        reason: Why, as a tool result tells the model ("its server exited").
    """

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(f"MCPClient {label}: {reason}")
        self.reason = reason
