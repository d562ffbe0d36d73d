"""What any HTTP model adapter needs to describe a failed call, whatever its SDK.

A :class:`Failure` is one failed call in words a person can act on: what happened, the
HTTP status, and whether it was throttling worth a retry (with the wait the server
asked for, read by :func:`retry_after_seconds`). :func:`describe_cause` names the
transport error at the bottom of an SDK's wrapped exceptions; :func:`quote` shortens a
body or an event's data for a message. The adapters' own ``_*_errors`` modules map their
SDK's exceptions onto these.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Final, final

from stageware._host._shorten import shorten

__all__ = ["Failure", "describe_cause", "quote", "retry_after_seconds"]

# How much of a response body or an event's data a message quotes.
_MAX_QUOTE: Final = 300
# How deep a message follows an exception's cause chain.
_MAX_CAUSES: Final = 8


@final
@dataclass(frozen=True, slots=True)
class Failure:
    """One failed call, described.

    Attributes:
        what: What went wrong, as the end of a sentence that names the model.
        status_code: The HTTP status of an error response.
        throttled: Whether the server was throttling (retrying later may succeed).
        retry_after: Seconds the server asked to wait, from ``Retry-After``.
        context_overflow: Whether the request did not fit the model's context window.
    """

    what: str
    status_code: int | None = None
    throttled: bool = False
    retry_after: float | None = None
    context_overflow: bool = False


def describe_cause(error: BaseException) -> str:
    """An exception and the root of its cause chain, each as its type and its text.

    Transport errors are often wrapped several times without text of their own; the OS
    error at the bottom (``ConnectionResetError: [Errno 104] ...``) is what tells a reset
    from a refusal. So the chain is followed through suppressed contexts too, and the
    links in between that say nothing new are left out.
    """
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in chain and len(chain) < _MAX_CAUSES:
        chain.append(link)
        link = link.__cause__ or link.__context__
    shown = [chain[0]]
    for link in chain[1:-1]:
        if str(link) and str(link) != str(shown[-1]):
            shown.append(link)
    if len(chain) > 1:
        shown.append(chain[-1])
    return ", caused by ".join(
        f"{type(link).__name__}: {link}" if str(link) else type(link).__name__ for link in shown
    )


def quote(text: str | bytes) -> str:
    """The start of a body or an event's data, quoted, for a message about it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return repr(shorten(text.strip(), _MAX_QUOTE))


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a throttling response asked for, in seconds, or ``None``.

    Reads ``retry-after-ms`` (more precise, where a server sends it) and then
    ``Retry-After``, as seconds or as an HTTP date; *now* is the current time
    (``time.time()``) for a date.
    """
    milliseconds = _non_negative(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _non_negative(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
