"""The tool specs an agent offers every model call, and the copies InvokeModel handlers see.

Every model call offers the model the specs of all the agent's tools, so whatever an
agent does per spec on every call multiplies with its tools. Building a fresh copy of each
spec for each call was most of an invocation's cost with 200 tools. The rules kept here:

- A ``@tool``'s spec is fixed when its function is decorated: the agent reads it once,
  when it is built (and again only when a tool provider's tools change, which rebuilds
  this, ``AgentTools``), and a model call no handler sees gets the tool's own spec object, not
  a copy (as the model gets the agent's own history), in a list of its own. Nothing in
  the host changes it, and a model must not either (the ``Model`` protocol says so);
  ``FunctionTool.tool_spec`` gives anyone else a copy.
- Any other ``AgentTool`` may describe itself differently from one call to the next, so
  its ``tool_spec`` is read on every model call, as Strands reads it.
- An InvokeModel Input or Wrap handler sees deep copies (the spec's copy rules), so a
  handler that changes what it sees never changes what the agent offers the next call.
  The copies are kept from one call to the next while they still equal the agent's specs
  (one comparison, in C, in the usual case) and made again where they do not, as
  ``HistoryCopies`` does for the history, with the same two differences from copying
  afresh: a handler that kept a spec from an earlier call and changes it later changes
  the copy a later call sees (never the agent's spec), and values that compare equal
  count as unchanged. Every call gets a list of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import final

from stageware._generated.payloads import ToolSpec
from stageware._runtime import copy_payload

from .tools import AgentTool, fixed_tool_spec

__all__ = ["ToolSpecCopies", "ToolSpecs"]


@final
class ToolSpecs:
    """The specs of one agent's tools, in registration order."""

    __slots__ = ("_read_per_call", "_specs")

    def __init__(self, tools: Iterable[AgentTool]) -> None:
        self._specs: list[ToolSpec] = []
        # (position, tool) of the tools whose spec is read on every call.
        self._read_per_call: list[tuple[int, AgentTool]] = []
        for position, tool in enumerate(tools):
            spec = fixed_tool_spec(tool)
            if spec is None:
                spec = tool.tool_spec
                self._read_per_call.append((position, tool))
            self._specs.append(spec)

    def current(self) -> list[ToolSpec]:
        """The specs to offer the next model call, in a list of its own.

        The list is new (copying pointers is cheap), so a model that adds to it or
        removes from it changes nothing of the agent's; the specs in it are the tools'
        own, which the caller must not change.
        """
        specs = list(self._specs)
        for position, tool in self._read_per_call:
            specs[position] = tool.tool_spec
        return specs


@final
class ToolSpecCopies:
    """Deep copies of one agent's tool specs, reused while they still equal them."""

    __slots__ = ("_copies",)

    def __init__(self) -> None:
        self._copies: list[ToolSpec] = []

    def copy_of(self, specs: list[ToolSpec]) -> list[ToolSpec]:
        """A list of deep copies of *specs*, for one model call a handler sees."""
        copies = self._copies
        if copies != specs:
            kept = copies if len(copies) == len(specs) else []
            copies = [
                kept[position] if kept and kept[position] == spec else copy_payload(spec)
                for position, spec in enumerate(specs)
            ]
            self._copies = copies
        return list(copies)
