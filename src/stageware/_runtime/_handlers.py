"""Generic handler types, one per phase.

Sync and async handlers are separate aliases on purpose: mypy loses lambda inference
against a union of callables, so the ``add_middleware`` overloads take each form on its
own. The schema generator derives per-stage aliases from these
(``InvokeModelWrapHandler``, ``InvokeModelNext``, ...), which keep ``def`` annotations short.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TypeAlias, TypeVar

__all__ = [
    "AsyncInputHandler",
    "AsyncOutputHandler",
    "InputHandler",
    "NextFn",
    "OutputHandler",
    "WrapHandler",
]

C = TypeVar("C")
R = TypeVar("R")
E = TypeVar("E")

NextFn: TypeAlias = Callable[[C], AsyncGenerator[E, None]]
"""The rest of the chain, as a Wrap handler sees it: call it with a context, iterate the events.

It returns an async generator (``aclose()``, ``asend()``), as in Strands, so a handler may
annotate ``next_fn`` either way: ``Callable[[C], AsyncGenerator[...]]`` or
``Callable[[C], AsyncIterator[...]]``.
"""

InputHandler: TypeAlias = Callable[[C], C]
"""A synchronous Input handler: returns the context the rest of the chain uses."""

AsyncInputHandler: TypeAlias = Callable[[C], Awaitable[C]]
"""An ``async def`` Input handler."""

WrapHandler: TypeAlias = Callable[[C, NextFn[C, E]], AsyncIterator[E]]
"""A Wrap handler: an async generator function ``(context, next_fn)`` yielding events.

Its return may be annotated ``AsyncIterator[...]`` or ``AsyncGenerator[..., None]``.
"""

OutputHandler: TypeAlias = Callable[[R], R]
"""A synchronous Output handler: returns the result wrapper the stage ends with."""

AsyncOutputHandler: TypeAlias = Callable[[R], Awaitable[R]]
"""An ``async def`` Output handler."""
