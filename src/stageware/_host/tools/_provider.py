"""The ``ToolProvider`` protocol: a source of tools that may change while an agent runs.

An MCP server's tools are the first: the server can add or remove tools at any time
(``notifications/tools/list_changed``). An agent given a provider reads its current tools
at every model call and every tool lookup, so the next model call offers what the
provider holds then, and never a tool it has dropped.

Reading is synchronous and must not block: the agent may run on the caller's event loop.
A provider that needs to do I/O first (connect, fetch an announced list) does it in
``refresh_tools()``, a coroutine the agent awaits before every model call
(``RefreshingToolProvider``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._protocol import AgentTool

__all__ = ["RefreshingToolProvider", "ToolProvider"]


@runtime_checkable
class ToolProvider(Protocol):
    """Something whose tools an agent reads each time it needs them.

    Its ``repr()`` names it in the agent's errors (a clash of tool names, say), so it
    must not show secrets.
    """

    def current_tools(self) -> Sequence[AgentTool]:
        """The provider's tools now; cheap and non-blocking, called at every model call.

        Return the same sequence object while the tools are unchanged: the agent
        rebuilds its index of tools by name only when it gets a different one.
        """
        ...


@runtime_checkable
class RefreshingToolProvider(ToolProvider, Protocol):
    """A tool provider with I/O to do before its tools are read; the agent awaits it."""

    async def refresh_tools(self) -> None:
        """Get ``current_tools()`` up to date for the model call about to be made.

        Awaited on the agent's event loop before every model call, so it must not block
        the loop, and it must end (bound its waits): the model call waits for it.
        Cancelling it must end it promptly.
        """
        ...
