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
    """The agent a stage runs for, as middleware sees it.

    A harness of your own supplies an object with both attributes. ``agent_id`` was added
    after ``name``: the generated interrupt ids are scoped by it, so a harness object
    without it fails the type check, and an ``interrupt()`` with ``AttributeError``.
    """

    @property
    def name(self) -> str:
        """The agent's name."""
        ...

    @property
    def agent_id(self) -> str:
        """Identifies the agent in interrupt ids, session keys and traces.

        It must be stable across processes (a resumed run recomputes its interrupt ids)
        and distinct among agents whose interrupts one caller answers (sub-agents of one
        parent, the nodes of a graph), so that an answer reaches only the agent that asked.
        """
        ...
