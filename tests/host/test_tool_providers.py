"""Tool providers: tools an agent reads at every model call and tool lookup.

The provider here is plain Python (``ToolProvider`` is a protocol); the MCP client, the
provider the library ships, is tested against real servers in ``test_mcp_*``.
"""

from __future__ import annotations

import logging
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


def test_a_clash_that_appears_later_leaves_the_providers_tool_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool(name="ping")
    def other_ping() -> str:
        """Answer something else."""
        return "not pong"

    shelf = Shelf(echo)
    model = ScriptedModel([ScriptedTurn(tool_calls=[ScriptedToolCall("ping", {})]), "pong"])
    agent = Agent(model, tools=[shelf, ping])
    shelf.tools = (echo, other_ping)

    with caplog.at_level(logging.WARNING, "stageware.tools"):
        agent("hi")

    # The agent's own tool keeps its name, wherever the provider stands in the order.
    assert [spec["name"] for spec in model.requests[0].tool_specs] == ["echo", "ping"]
    assert agent.messages[2]["content"][0]["toolResult"]["content"] == [{"text": "pong"}]
    warning = next(r.getMessage() for r in caplog.records if "two tools" in r.getMessage())
    assert warning.startswith(
        "two tools are named 'ping': the @tool tests.host.test_tool_providers.ping and "
        "the @tool tests.host.test_tool_providers."
    )
    assert "other_ping of Shelf(); the second is left out" in warning


def test_an_item_that_is_neither_a_tool_nor_a_provider_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="or pass a tool provider such as"):
        Agent(ScriptedModel([]), tools=[print])  # type: ignore[list-item]
