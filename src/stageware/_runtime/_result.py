"""The wrapper Output handlers receive and return.

Output handlers get the stage's result event wrapped in a ``MiddlewareResult`` subclass
(``InvokeModelResult``, ...) so that metadata can be added later without changing
handler signatures. The registry unwraps the returned wrapper back into the stream:
Wrap handlers and hosts only ever see plain events.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Generic, Self, TypeVar

from ._unset import UNSET, Unset

__all__ = ["MiddlewareResult"]

T = TypeVar("T")


@dataclass(frozen=True)
class MiddlewareResult(Generic[T]):
    """A stage's result event, as seen by Output handlers.

    Attributes:
        result: The event that ends the stage (for example ``ModelStopReason``).
    """

    result: T

    @property
    def value(self) -> T:
        """The result event under its earlier name; same object as :attr:`result`."""
        return self.result

    def replace(self, *, result: T | Unset = UNSET, value: T | Unset = UNSET) -> Self:
        """Return a copy holding another result event.

        ``value`` is the earlier name of ``result`` and is accepted for existing
        handlers; giving both is an error because one would silently lose.
        """
        if not isinstance(result, Unset) and not isinstance(value, Unset):
            raise TypeError("replace() takes either result= or value=, not both")
        new = value if isinstance(result, Unset) else result
        if isinstance(new, Unset):
            return dataclasses.replace(self)
        return dataclasses.replace(self, result=new)
