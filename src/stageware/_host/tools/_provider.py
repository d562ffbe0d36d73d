"""The ``ToolProvider`` protocol: a source of tools that may change while an agent runs.

An MCP server's tools are the first: the server can add or remove tools at any time
(``notifications/tools/list_changed``). An agent given a provider reads its current tools
at every model call and every tool lookup, so the next model call offers what the
provider holds then, and never a tool it has dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._protocol import AgentTool

__all__ = ["ToolProvider"]


@runtime_checkable
class ToolProvider(Protocol):
    """Something whose tools an agent reads each time it needs them.

    Its ``repr()`` names it in the agent's errors (a clash of tool names, say), so it
    must not show secrets.
    """

    def current_tools(self) -> Sequence[AgentTool]:
        """The provider's tools now; cheap, as it is called at every model call.

        Return the same sequence object while the tools are unchanged: the agent
        rebuilds its index of tools by name only when it gets a different one.
        """
        ...
