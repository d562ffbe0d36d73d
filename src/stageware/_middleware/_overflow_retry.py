"""Reduce and retry once: what the conversation managers do when the model says "too long".

A manager's budget is an estimate; the provider counts with its own tokenizer. When the
inner chain raises ``ContextWindowOverflowError`` before any event was passed on, the
manager builds a smaller request (``reduce``: half of what failed, or the smallest
valid one) and sends that once. A second overflow propagates, for the host to end the
run with; so does an overflow after events were passed on (nothing can be taken back),
and one whose request cannot be made smaller (``reduce`` returns ``None``: the same
request would fail the same way). Each retry is logged at WARNING by
``stageware.middleware``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Final

from stageware import (
    ContextWindowOverflowError,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
)

__all__ = ["send_with_one_retry"]

_log: Final = logging.getLogger("stageware.middleware")


async def send_with_one_retry(
    manager: str,
    request: InvokeModelContext,
    next_fn: InvokeModelNext,
    reduce: Callable[[InvokeModelContext], InvokeModelContext | None],
) -> AsyncGenerator[InvokeModelEvent, None]:
    """Stream *request*; on an overflow before its first event, stream ``reduce(request)``."""
    passed_on = 0
    try:
        async with aclosing(next_fn(request)) as events:
            async for event in events:
                passed_on += 1
                yield event
        return
    except ContextWindowOverflowError as error:
        if passed_on:
            error.add_note(
                f"{manager}: not retried with less context: the answer had already "
                f"started ({passed_on} event(s) passed on)"
            )
            raise
        smaller = reduce(request)
        if smaller is None:
            error.add_note(
                f"{manager}: not retried: the request holds only the current turn "
                f"({len(request.messages)} message(s)) and cannot be made smaller"
            )
            raise
        _log.warning(
            "%s: the model refused %d message(s) as too long for its context window (%s); "
            "retrying once with %d",
            manager,
            len(request.messages),
            error,
            len(smaller.messages),
        )
    try:
        async with aclosing(next_fn(smaller)) as events:
            async for event in events:
                yield event
    except ContextWindowOverflowError as error:
        error.add_note(
            f"{manager}: the retry with {len(smaller.messages)} of "
            f"{len(request.messages)} message(s) overflowed too; not retried again"
        )
        raise
