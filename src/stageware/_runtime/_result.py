"""The wrapper Output handlers receive and return.

Output handlers get the stage's result event wrapped in a ``MiddlewareResult`` subclass
(``InvokeModelResult``, ...) so that metadata can be added later without changing
handler signatures. The registry unwraps the returned wrapper back into the stream:
Wrap handlers and hosts only ever see plain events.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Generic, Self, TypeVar, overload

from ._unset import UNSET, Unset

__all__ = ["MiddlewareResult"]

T = TypeVar("T")


@dataclass(frozen=True, init=False)
class MiddlewareResult(Generic[T]):
    """A stage's result event, as seen by Output handlers.

    Build it as ``InvokeModelResult(event)``, ``InvokeModelResult(result=event)`` or, under
    the earlier name, ``InvokeModelResult(value=event)``.

    Attributes:
        result: The event that ends the stage (for example ``ModelStopReason``).
    """

    result: T

    @overload
    def __init__(self, result: T) -> None: ...
    @overload
    def __init__(self, *, value: T) -> None: ...
    def __init__(self, result: T | Unset = UNSET, *, value: T | Unset = UNSET) -> None:
        chosen = _one_of(result, value)
        if isinstance(chosen, Unset):
            raise TypeError(f"{type(self).__name__}() needs the result event: result= or value=")
        # Frozen: assignment goes around the dataclass's __setattr__ guard, once, here.
        object.__setattr__(self, "result", chosen)

    @property
    def value(self) -> T:
        """The result event under its earlier name; same object as ``result``."""
        return self.result

    def replace(self, *, result: T | Unset = UNSET, value: T | Unset = UNSET) -> Self:
        """Return a copy holding another result event.

        ``value`` is the earlier name of ``result`` and is accepted for existing
        handlers; giving both is an error because one of them would be silently lost.
        """
        new = _one_of(result, value)
        if isinstance(new, Unset):
            return dataclasses.replace(self)
        return dataclasses.replace(self, result=new)


def _one_of(result: T | Unset, value: T | Unset) -> T | Unset:
    """The event given as ``result`` or under its earlier name ``value``; both is an error."""
    if not isinstance(result, Unset) and not isinstance(value, Unset):
        raise TypeError("give the result event as result= or value=, not both")
    return value if isinstance(result, Unset) else result
