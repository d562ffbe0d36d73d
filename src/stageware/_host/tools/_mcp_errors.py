"""The error an MCP client raises of its own (the SDK's ``MCPError`` is the server's)."""

from __future__ import annotations

__all__ = ["MCPConnectionError"]


class MCPConnectionError(RuntimeError):
    """An MCP server could not be reached, its session could not be opened, or is closed."""
