"""The agent's lifecycle hook callbacks, by event type."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast, final

from ._hook_events import LifecycleEvent

__all__ = ["HookCallback", "HookRegistry"]

EventT = TypeVar("EventT", bound=LifecycleEvent)

HookCallback = Callable[[EventT], "Awaitable[None] | None"]
"""A hook: a function of the event, sync or async, whose return value is ignored."""


@final
class HookRegistry:
    """Callbacks by lifecycle event type, run in registration order (reversed for "after").

    A callback registered for a base class (``LifecycleEvent`` itself, say) hears every
    event of its subclasses, in the same order as the callbacks for the exact type.
    """

    __slots__ = ("_callbacks",)

    def __init__(self) -> None:
        self._callbacks: list[tuple[type[LifecycleEvent], Callable[[Any], Any]]] = []

    def add(self, callback: HookCallback[EventT], event_type: type[EventT]) -> None:
        """Register *callback* for events of *event_type* and its subclasses.

        Raises:
            TypeError: If *event_type* is not a lifecycle event class or *callback* is not
                callable, so a swapped argument order fails here, not at the first event.
        """
        # Checked at run time too: untyped callers easily swap the two arguments.
        given = cast(object, event_type)
        if not (isinstance(given, type) and issubclass(given, LifecycleEvent)):
            raise TypeError(
                f"add_hook(callback, event_type): event_type must be a lifecycle event class "
                f"such as BeforeToolCallEvent, got {event_type!r}"
            )
        target = cast(object, callback)
        if not callable(target):
            raise TypeError(
                f"add_hook(callback, event_type): callback {callback!r} is not callable"
            )
        self._callbacks.append((event_type, callback))

    async def fire(self, event: EventT) -> EventT:
        """Run the callbacks for *event* one after another and return the event.

        An exception from a callback propagates (an ``InterruptException`` from a hook that
        may interrupt included): a failing hook is a failing run, not a log line.
        """
        callbacks = [callback for kind, callback in self._callbacks if isinstance(event, kind)]
        ordered = reversed(callbacks) if event.reverse_callbacks else iter(callbacks)
        for callback in ordered:
            outcome = callback(event)
            if inspect.isawaitable(outcome):
                await outcome
        return event
