"""Which event loop this thread is running: asyncio's or trio's, the two anyio runs on."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

__all__ = ["running_loop"]


def running_loop() -> object | None:
    """An object that identifies the event loop running in this thread, or ``None``.

    It is asyncio's loop, or the token of the current ``trio.run``; two calls return the
    same object exactly when they run on the same loop. trio is looked up only if
    something already imported it: without it, no trio loop can be running.
    """
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    trio: Any = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        token: object = trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
    return token
