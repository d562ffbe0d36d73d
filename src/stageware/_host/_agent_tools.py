"""One agent's tools: the fixed ones, those of tool providers, by name and as specs.

``Agent(tools=[...])`` takes tools (``@tool`` functions, any ``AgentTool``) and tool
providers (an ``MCPClient``), in any order. The rules kept here:

- Names are unique across all of them; a clash when the agent is built is a
  ``ValueError`` that names both sources, so the user can tell which server or function
  to rename or prefix.
- An agent without providers works as before: its index and specs are built once, and a
  model call costs one check beyond that.
- Before every model call the agent awaits ``refresh()``, which awaits each provider's
  ``refresh_tools()`` if it has one (an MCP client connects, or waits for a list its
  server announced); reading the tools never blocks.
- A provider's tools are read at every model call (``current()``) and every tool lookup
  (``get()``). The index is rebuilt only when a provider returns a different sequence
  from the last one, so a tool list that changed between two model calls is what the
  second call offers. A clash that appears then (a server added a tool named like a
  ``@tool``) leaves the provider's tool out, with a WARNING naming both: the tools the
  agent was built with keep their names, and one server's change does not stop the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TypeGuard, cast, final

from stageware._generated.payloads import ToolSpec

from ._tool_specs import ToolSpecs
from .tools import AgentTool, FunctionTool, RefreshingToolProvider, ToolProvider

__all__ = ["AgentTools"]

_log = logging.getLogger("stageware.tools")


@final
class AgentTools:
    """The tools and tool providers an agent was given, in their order."""

    __slots__ = ("_by_name", "_items", "_providers", "_refreshing", "_seen", "_specs")

    def __init__(self, items: Iterable[AgentTool | ToolProvider]) -> None:
        """Check *items* and index them.

        Raises:
            TypeError: If an item is neither a tool nor a tool provider.
            ValueError: If two tools share a name.
        """
        checked: list[AgentTool | ToolProvider] = []
        for item in items:
            # A @tool first: the protocol check reads every member, a copy of the spec
            # included. Checked on a copy, so that the item keeps its declared type.
            candidate = cast(object, item)
            if (
                not isinstance(candidate, FunctionTool)
                and not isinstance(candidate, ToolProvider)
                and not isinstance(candidate, AgentTool)
            ):
                raise TypeError(
                    f"{item!r} is not a tool: decorate a function with @tool, implement "
                    "tool_name, tool_spec and stream(), or pass a tool provider such as "
                    "stageware.mcp.MCPClient"
                )
            checked.append(item)
        self._items = checked
        self._providers: list[ToolProvider] = [item for item in checked if _is_provider(item)]
        self._refreshing = [
            provider for provider in self._providers if isinstance(provider, RefreshingToolProvider)
        ]
        self._seen: list[Sequence[AgentTool]] = []
        self._by_name: dict[str, AgentTool] = {}
        self._specs = ToolSpecs(())
        self._index(strict=True)

    async def refresh(self) -> None:
        """Let the providers that do I/O get their tools ready for the next model call."""
        for provider in self._refreshing:
            await provider.refresh_tools()

    def _providers_changed(self) -> bool:
        return any(
            provider.current_tools() is not seen
            for provider, seen in zip(self._providers, self._seen, strict=True)
        )

    def _index(self, *, strict: bool = False) -> None:
        """Index the tools by name; a clash raises if *strict*, else a provider's tool yields.

        Not strict, the fixed tools are claimed first, so a provider's tool never takes a
        name from one, wherever it stands in the order; among providers the first wins.
        """
        by_name: dict[str, AgentTool] = {}
        sources: dict[str, object] = {}
        fixed: dict[str, AgentTool] = {}
        if not strict:
            fixed = {
                tool.tool_name: tool
                for tool in (cast(AgentTool, item) for item in self._items)
                if not _is_provider(tool)
            }
        seen: list[Sequence[AgentTool]] = []
        for item in self._items:
            if _is_provider(item):
                members = item.current_tools()
                seen.append(members)
            else:
                members = (cast(AgentTool, item),)
            for tool in members:
                name = tool.tool_name
                taken = by_name.get(name, fixed.get(name))
                if taken is not None and taken is not tool:
                    where = f"{_source(taken, sources.get(name, taken))} and {_source(tool, item)}"
                    if strict or not _is_provider(item):
                        raise ValueError(
                            f"two tools are named {name!r}: {where}; tool names must be "
                            "unique (an MCP server's tools can be renamed with "
                            "MCPClient(..., prefix=...))"
                        )
                    _log.warning(
                        "two tools are named %r: %s; the second is left out until the name "
                        "is free (rename it, or give its MCPClient a prefix)",
                        name,
                        where,
                    )
                    continue
                by_name[name] = tool
                sources[name] = item
        self._by_name, self._seen = by_name, seen
        self._specs = ToolSpecs(by_name.values())

    def _current(self) -> None:
        if self._providers and self._providers_changed():
            self._index()

    def get(self, name: str) -> AgentTool | None:
        """The tool named *name* now, or ``None``."""
        self._current()
        return self._by_name.get(name)

    def tools(self) -> list[AgentTool]:
        """The tools now, providers' included, in order."""
        self._current()
        return list(self._by_name.values())

    def names(self) -> list[str]:
        """The names of the tools now, in order."""
        self._current()
        return list(self._by_name)

    def current(self) -> list[ToolSpec]:
        """The specs to offer the next model call, in a list of its own (``ToolSpecs``)."""
        self._current()
        return self._specs.current()


def _is_provider(item: object) -> TypeGuard[ToolProvider]:
    # A @tool is never a provider; checked first, as the protocol check reads members.
    return not isinstance(item, FunctionTool) and isinstance(item, ToolProvider)


def _source(tool: AgentTool, item: object) -> str:
    if isinstance(tool, FunctionTool):
        func = tool.__wrapped__
        what = f"the @tool {func.__module__}.{func.__qualname__}"
    else:
        what = f"the tool {tool!r}" if item is tool else "a tool"
    return what if item is tool else f"{what} of {item!r}"
