"""Structural types for the host objects that stage contexts carry.

The built-in stage schema names these types; a host (the reference agent or a
harness of your own) supplies objects that fit them. They are deliberately small:
what middleware may rely on, not everything a host has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    # Only for annotations: the generated package imports this runtime.
    from stageware._generated.events import ExecuteToolEvent
    from stageware._generated.payloads import (
        Messages,
        StreamEvent,
        SystemContentBlock,
        ToolChoice,
        ToolSpec,
        ToolUse,
    )

    from ._tool_context import ToolContext

__all__ = ["AgentHandle", "AgentTool", "CancelSignal", "Model"]


@runtime_checkable
class Model(Protocol):
    """A model that streams Converse-style events for a conversation."""

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        """Stream the model's response to *messages* as Converse stream events."""
        ...


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


@runtime_checkable
class CancelSignal(Protocol):
    """A flag a host sets to ask running work to stop."""

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        ...


@runtime_checkable
class AgentHandle(Protocol):
    """The agent a stage runs for, as middleware sees it."""

    @property
    def name(self) -> str:
        """The agent's name."""
        ...
