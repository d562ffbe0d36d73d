"""Code a middleware's author wrote, run while a policy loads: how its failure is contained.

Loading a policy imports plugins and the modules a spec names, builds class middleware
and validates settings with their config models: code the operator did not write. Its
failure is a problem of the spec, reported with the others and naming the module or the
middleware, not the end of the process. So every exception is caught there, ``SystemExit``
and other ``BaseException`` subclasses included: a module that calls ``sys.exit`` on
import (a script named by mistake, a plugin that gives up) would otherwise end
``stageware policy check`` with its own exit status and no word of why. What
:data:`PASSING` names is not caught: a ``KeyboardInterrupt`` is the user's, and a
generator's or a task's ending belongs to its caller.
"""

from __future__ import annotations

import asyncio

__all__ = ["PASSING", "describe_failure"]

PASSING = (KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)
"""What loading a policy lets through from an author's code; it catches everything else."""


def describe_failure(exc: BaseException) -> str:
    """*exc* in a message: its type and text, or what a ``SystemExit`` means."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}), which loading a policy does not allow"
    return f"{type(exc).__name__}: {exc}"
