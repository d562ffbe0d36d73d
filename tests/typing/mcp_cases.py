"""MCP: a client is a tool provider an agent takes beside its tools; its tools are typed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_type

from stageware import Agent, ScriptedModel, ToolProvider, tool
from stageware.mcp import MCPClient, MCPTool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# Positive cases.


def a_client_goes_in_the_tools_beside_a_tool_function() -> None:
    client = MCPClient.stdio("python", ["server.py"], env={"LEVEL": "debug"}, prefix="docs")
    remote = MCPClient.http("http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer t"})
    assert_type(client.current_tools(), Sequence[MCPTool])
    provider: ToolProvider = client
    Agent(ScriptedModel([]), tools=[add, client, remote, provider])


async def a_client_is_a_context_manager_either_way() -> None:
    with MCPClient.stdio("python", ["server.py"]) as client:
        assert_type(client, MCPClient)
    async with MCPClient.http("http://127.0.0.1:8000/mcp") as remote:
        assert_type(remote.tool_names, list[str])


# Expected errors: each must stay an error, or the run fails.


def something_else_in_the_tools_is_rejected() -> None:
    Agent(ScriptedModel([]), tools=[add, "server.py"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]


def an_mcp_tool_has_no_other_attributes() -> None:
    client = MCPClient.stdio("python", ["server.py"])
    client.current_tools()[0].server_name  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
