"""An MCP server's tools for an agent: ``MCPClient`` over stdio or streamable HTTP.

It needs the optional ``mcp`` package (the official SDK):

```bash
pip install -e '.[mcp]'    # in a clone; the README's Install gives a git URL form
```

``MCPClient.stdio(command, args)`` runs a server as a subprocess; ``MCPClient.http(url)``
speaks to one over streamable HTTP. Pass the client in an agent's ``tools``: its tools run
through the ExecuteTool chain like any tool, so middleware and policies govern them.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._host.tools._mcp_client import MCPClient
    from stageware._host.tools._mcp_errors import MCPConnectionError
    from stageware._host.tools._mcp_tool import MCPTool
except ModuleNotFoundError as _missing:
    # Only a missing SDK gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] not in ("mcp", "mcp_types"):
        raise
    raise ImportError(
        "stageware.mcp needs the 'mcp' package, from " + _extras.needs_extra("mcp")
    ) from _missing

__all__ = ["MCPClient", "MCPConnectionError", "MCPTool"]
