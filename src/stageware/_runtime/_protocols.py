"""Structural types for the host objects that stage contexts carry.

The built-in stage schema names these types; a host (the reference agent or a
harness of your own) supplies objects that fit them. They are deliberately small:
what middleware may rely on, not everything a host has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["AgentHandle", "AgentTool", "CancelSignal", "Model"]


@runtime_checkable
class Model(Protocol):
    """A model that streams Converse-style events for a conversation."""

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tool_specs: Sequence[Mapping[str, Any]] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Mapping[str, Any]]:
        """Stream the model's response as Converse stream events."""
        ...


@runtime_checkable
class AgentTool(Protocol):
    """A tool the model can call."""

    @property
    def tool_name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def tool_spec(self) -> Mapping[str, Any]:
        """The Converse tool specification sent to the model."""
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
