"""Tool providers: tools an agent reads at every model call and tool lookup.

The provider here is plain Python (``ToolProvider`` is a protocol); the MCP client, the
provider the library ships, is tested against real servers in ``test_mcp_*``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from stageware import (
    Agent,
    AgentTool,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ToolContext,
    ToolProvider,
    tool,
)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


class Shelf:
    """A provider whose tools the test changes; a new tuple on every change."""

    def __init__(self, *tools: AgentTool) -> None:
        self.tools: tuple[AgentTool, ...] = tools
        self.reads = 0

    def current_tools(self) -> Sequence[AgentTool]:
        self.reads += 1
        return self.tools

    def __repr__(self) -> str:
        return "Shelf()"


def test_a_tool_added_by_a_tool_is_offered_by_the_next_model_call() -> None:
    shelf = Shelf(ping)

    @tool
    def stock(context: ToolContext) -> str:
        """Put echo on the shelf."""
        shelf.tools = (*shelf.tools, echo)
        return "stocked"

    assert isinstance(shelf, ToolProvider)
    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("stock", {})]),
            ScriptedTurn(tool_calls=[ScriptedToolCall("echo", {"text": "hi"})]),
            "done",
        ]
    )
    agent = Agent(model, tools=[stock, shelf])

    agent("stock up, then echo")

    names = [[spec["name"] for spec in request.tool_specs] for request in model.requests]
    assert names == [["stock", "ping"], ["stock", "ping", "echo"], ["stock", "ping", "echo"]]
    echoed = agent.messages[-2]["content"][0]["toolResult"]
    assert echoed["content"] == [{"text": "hi"}]
    assert agent.tool_names == ["stock", "ping", "echo"]


def test_a_tool_the_provider_dropped_is_unknown_to_the_next_lookup() -> None:
    shelf = Shelf(ping, echo)
    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("echo", {"text": "x"})]), "ok"]
    )
    agent = Agent(model, tools=[shelf])
    shelf.tools = (ping,)

    agent("echo")

    result = agent.messages[2]["content"][0]["toolResult"]
    assert result["status"] == "error"
    assert "Unknown tool" in result["content"][0]["text"]
    assert [spec["name"] for spec in model.requests[0].tool_specs] == ["ping"]


def test_a_clash_that_appears_later_fails_the_next_model_call_naming_both() -> None:
    shelf = Shelf(echo)
    agent = Agent(ScriptedModel(["never"]), tools=[ping, shelf])
    shelf.tools = (echo, ping)

    with pytest.raises(ValueError, match="two tools are named 'ping'") as raised:
        agent("hi")

    assert (
        "the @tool tests.host.test_tool_providers.ping and "
        "the @tool tests.host.test_tool_providers.ping of Shelf()"
    ) in str(raised.value)


def test_an_item_that_is_neither_a_tool_nor_a_provider_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="or pass a tool provider such as"):
        Agent(ScriptedModel([]), tools=[print])  # type: ignore[list-item]
