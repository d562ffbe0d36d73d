"""Structural types for the host objects that stage contexts carry.

The built-in stage schema names these types; a host (the reference agent or a
harness of your own) supplies objects that fit them. They are deliberately small:
what middleware may rely on, not everything a host has.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["AgentHandle", "CancelSignal"]


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
