"""The ``AgentTool`` protocol: what the host runs when the model calls a tool.

It is typed with the generated payloads and events, so it lives above them, not in the
runtime. ``@tool`` builds one from a function; any object that fits is a tool too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from stageware._generated.events import ExecuteToolEvent
from stageware._generated.payloads import ToolSpec, ToolUse

from ._context import ToolContext

__all__ = ["AgentTool"]


@runtime_checkable
class AgentTool(Protocol):
    """A tool the model can call."""

    @property
    def tool_name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def tool_spec(self) -> ToolSpec:
        """The Converse tool specification sent to the model."""
        ...

    def stream(self, tool_use: ToolUse, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
        """Run the tool for *tool_use*.

        Yield ``ToolStreamEvent`` for progress and end with one ``ToolResultEvent``; a tool
        that needs a human yields a ``ToolInterruptEvent`` (or raises ``InterruptException``)
        instead of a result. An exception raised here becomes an error result for the model.
        """
        ...
