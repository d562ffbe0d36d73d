"""An MCP server's tools in an agent, over stdio and streamable HTTP on loopback.

The server (``mcp_servers/tools_server.py``) is built with the SDK's own server API and
runs as a real process; the client is the SDK's, making real requests. The model is
scripted, so what reaches it (the specs) and what reaches the history (the results) is
checked exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from stageware import (
    Agent,
    ExecuteToolContext,
    ExecuteToolStage,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)
from stageware.mcp import MCPClient

from .mcp_servers.servers import http_server, stdio_client

TOOLS = ["add", "forecast", "pixel", "refuse", "slow", "crash", "grow", "pid"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """One HTTP server for the tests that change nothing on it: a client is cheap."""
    with http_server() as (address, _):
        yield address


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request: pytest.FixtureRequest, url: str) -> Iterator[MCPClient]:
    """One client per transport for the tests that change nothing on the server."""
    opened = stdio_client() if request.param == "stdio" else MCPClient.http(url)
    with opened:
        yield opened


def _calls(*calls: tuple[str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, args) for name, args in calls])


def _results(agent: Agent) -> list[dict[str, Any]]:
    return [
        dict(block["toolResult"])
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]


def test_the_specs_reach_the_model_and_the_results_the_history(client: MCPClient) -> None:
    model = ScriptedModel([_calls(("add", {"a": 2, "b": 3})), "five"])
    agent = Agent(model, tools=[client])

    result = agent("add 2 and 3")

    assert result.text == "five"
    specs = model.requests[0].tool_specs
    assert [spec["name"] for spec in specs] == TOOLS
    assert specs[0]["description"] == "Add two integers."
    assert specs[0]["inputSchema"]["json"]["properties"]["a"]["type"] == "integer"
    # FastMCP wraps a plain value as {"result": ...} and sends its text as well.
    assert _results(agent) == [
        {
            "toolUseId": "tooluse_0_0",
            "status": "success",
            "content": [{"json": {"result": 5}}, {"text": "5"}],
        }
    ]
    # The second model call sees the result in its history.
    assert model.requests[1].messages[-1]["content"][0]["toolResult"]["status"] == "success"


def test_structured_content_is_one_json_block_and_an_image_an_image_block(
    client: MCPClient,
) -> None:
    agent = Agent(
        ScriptedModel([_calls(("forecast", {"city": "Oslo"}), ("pixel", {})), "ok"]),
        tools=[client],
    )

    agent("forecast and a pixel")

    forecast, pixel = _results(agent)
    # The server sent the JSON as text too; the model reads it once.
    assert forecast["content"] == [{"json": {"city": "Oslo", "celsius": 21.5}}]
    (block,) = pixel["content"]
    assert block["image"]["format"] == "png"
    assert block["image"]["source"]["bytes"].startswith("iVBORw0KGgo")


def test_a_tool_error_and_bad_arguments_are_error_results_the_model_reads(
    client: MCPClient,
) -> None:
    agent = Agent(
        ScriptedModel([_calls(("refuse", {"reason": "no"}), ("add", {"a": "x"})), "sorry"]),
        tools=[client],
    )

    result = agent("go")

    assert result.text == "sorry"
    refused, bad = _results(agent)
    assert refused == {
        "toolUseId": "tooluse_0_0",
        "status": "error",
        "content": [{"text": "Error executing tool refuse"}],
    }
    assert bad["status"] == "error"
    assert "validation error" in bad["content"][0]["text"]


def test_mcp_tools_run_through_the_execute_tool_chain(client: MCPClient) -> None:
    seen: list[tuple[str, str]] = []

    def observe(context: ExecuteToolContext) -> ExecuteToolContext:
        assert context.tool is not None
        seen.append((context.tool_use["name"], type(context.tool).__name__))
        return context

    agent = Agent(ScriptedModel([_calls(("add", {"a": 1, "b": 1})), "two"]), tools=[client])
    agent.add_middleware(ExecuteToolStage.Input, observe)

    agent("1 + 1")

    assert seen == [("add", "MCPTool")]


def test_two_servers_with_one_tool_name_are_an_error_naming_both(url: str) -> None:
    # Two clients of one server list the same names, as two servers would.
    with MCPClient.http(url) as first, MCPClient.http(url + "/") as second:
        with pytest.raises(ValueError, match="two tools are named 'add'") as raised:
            Agent(ScriptedModel([]), tools=[first, second])
        message = str(raised.value)
        assert f"a tool of {first!r} and a tool of {second!r}" in message
        assert "prefix" in message

    with MCPClient.http(url) as first, MCPClient.http(url, prefix="b") as second:
        agent = Agent(ScriptedModel([]), tools=[first, second])
        assert agent.tool_names == [*TOOLS, *(f"b_{name}" for name in TOOLS)]


def test_an_mcp_tool_named_like_a_tool_function_is_an_error_naming_both(url: str) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with MCPClient.http(url) as server:
        with pytest.raises(ValueError, match="two tools are named 'add'") as raised:
            Agent(ScriptedModel([]), tools=[add, server])
        assert "the @tool tests.host.test_mcp_tools." in str(raised.value)

    with MCPClient.http(url, prefix="srv") as server:
        model = ScriptedModel([_calls(("srv_add", {"a": 4, "b": 4})), "8"])
        agent = Agent(model, tools=[add, server])
        agent("4 + 4")
        assert agent.tool_names[:2] == ["add", "srv_add"]
        assert _results(agent)[0]["content"][1] == {"text": "8"}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_adds_a_tool_is_seen_by_the_next_model_call(transport: str) -> None:
    model = ScriptedModel([_calls(("grow", {})), _calls(("double", {"x": 21})), "42"])
    with _fresh(transport) as client:
        agent = Agent(model, tools=[client])

        agent("grow, then double 21")

        first, second, third = ([spec["name"] for spec in r.tool_specs] for r in model.requests)
        assert "double" not in first
        assert second == third == [*TOOLS, "double"]
        assert _results(agent)[1]["content"][1] == {"text": "42"}


@contextmanager
def _fresh(transport: str) -> Iterator[MCPClient]:
    """A client of a server of its own, which the test may change."""
    if transport == "stdio":
        with stdio_client() as client:
            yield client
    else:
        with http_server() as (url, _), MCPClient.http(url) as client:
            yield client
