"""The names the generated package defines for each stage, and the module of each.

Every stage ``S`` becomes ``SContext``, ``SResult``, ``SEvent`` (its event union), the
token ``SStage`` and the handler aliases. The name checks, the views that define these
names and ``__init__`` that re-exports them all read them from here, so they cannot
drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALIAS_GENERICS", "HandlerAlias", "StageNames"]

# Suffix, the runtime generic it aliases (with its arguments), and the alias's doc.
_ALIASES: tuple[tuple[str, str, str, str], ...] = (
    ("Next", "NextFn", "{context}, {event}", "The `next_fn` a `{token}` Wrap handler calls."),
    ("InputHandler", "InputHandler", "{context}", "A synchronous `{token}.Input` handler."),
    (
        "AsyncInputHandler",
        "AsyncInputHandler",
        "{context}",
        "An asynchronous `{token}.Input` handler.",
    ),
    (
        "WrapHandler",
        "WrapHandler",
        "{context}, {event}",
        "A `{token}` Wrap handler (an async generator function).",
    ),
    ("OutputHandler", "OutputHandler", "{result}", "A synchronous `{token}.Output` handler."),
    (
        "AsyncOutputHandler",
        "AsyncOutputHandler",
        "{result}",
        "An asynchronous `{token}.Output` handler.",
    ),
)

ALIAS_GENERICS: tuple[str, ...] = tuple(generic for _, generic, _, _ in _ALIASES)
"""The runtime generics the handler aliases instantiate."""


@dataclass(frozen=True, slots=True)
class HandlerAlias:
    """``name: TypeAlias = target``, with a docstring."""

    name: str
    target: str
    doc: str


@dataclass(frozen=True, slots=True)
class StageNames:
    """The generated names of the stage called ``stage``."""

    stage: str

    @property
    def context(self) -> str:
        """The context dataclass."""
        return f"{self.stage}Context"

    @property
    def result(self) -> str:
        """The ``MiddlewareResult`` subclass."""
        return f"{self.stage}Result"

    @property
    def event(self) -> str:
        """The union of the stage's events."""
        return f"{self.stage}Event"

    @property
    def token(self) -> str:
        """The stage token."""
        return f"{self.stage}Stage"

    def aliases(self) -> tuple[HandlerAlias, ...]:
        """The handler type aliases, in the order ``stages.py`` defines them."""
        names = {
            "context": self.context,
            "event": self.event,
            "result": self.result,
            "token": self.token,
        }
        return tuple(
            HandlerAlias(
                self.stage + suffix,
                f"{generic}[{arguments.format_map(names)}]",
                doc.format_map(names),
            )
            for suffix, generic, arguments, doc in _ALIASES
        )

    def by_module(self) -> dict[str, tuple[str, ...]]:
        """Every generated name of the stage, by the module that defines it."""
        return {
            ".events": (self.event,),
            ".contexts": (self.context,),
            ".results": (self.result,),
            ".stages": (self.token, *(alias.name for alias in self.aliases())),
        }

    def all(self) -> tuple[str, ...]:
        """Every generated name of the stage."""
        return tuple(name for names in self.by_module().values() for name in names)
