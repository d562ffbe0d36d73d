"""What any HTTP model adapter needs to describe a failed call, whatever its SDK.

A :class:`Failure` is one failed call in words a person can act on: what happened, the
HTTP status, whether it was throttling worth a retry (with the wait the server asked
for, read by :func:`retry_after_seconds`), and whether the request did not fit the
model's context window (:func:`says_context_overflow` reads that from the server's
words). :func:`describe_cause` names the transport error at the bottom of an SDK's
wrapped exceptions; :func:`quote` shortens a body or an event's data for a message. The
adapters' own ``_*_errors`` modules map their SDK's exceptions onto these, so that every
adapter says the same thing the same way.
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

__all__ = [
    "CONTEXT_OVERFLOW_PHRASES",
    "Failure",
    "describe_cause",
    "quote",
    "retry_after_seconds",
    "says_context_overflow",
]

# How much of a response body or an event's data a message quotes.
_MAX_QUOTE: Final = 300
# How deep a message follows an exception's cause chain.
_MAX_CAUSES: Final = 8

CONTEXT_OVERFLOW_PHRASES: Final = (
    # OpenAI, OpenRouter, vLLM and most hosted OpenAI-compatible servers: "This model's
    # maximum context length is 8192 tokens"; OpenAI's code, as some proxies spell it.
    "maximum context length",
    "context_length_exceeded",
    # vLLM's newer wording: "... exceeds the max_model_len".
    "max_model_len",
    # llama.cpp's server: "the request exceeds the available context size".
    "the available context size",
    # LiteLLM's proxy: "litellm.ContextWindowExceededError: ...".
    "contextwindowexceeded",
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum", and "input length
    # and `max_tokens` exceed context limit: 198000 + 4096 > 200000".
    "prompt is too long",
    "exceed context limit",
    # Bedrock, by the model behind it: "Input is too long for requested model", "too many
    # total text bytes".
    "input is too long",
    "too long for requested model",
    "too many total text bytes",
    # Proxies and the rest, in plain words ("context window exceeded", "exceeds the
    # context length").
    "context window",
    "context length",
)
"""What servers say (lowercased) when a request does not fit the model's context window."""


@final
@dataclass(frozen=True, slots=True)
class Failure:
    """One failed call, described.

    Attributes:
        what: What went wrong, as the end of a sentence that names the model.
        status_code: The HTTP status of an error response.
        throttled: Whether the server was throttling (retrying later may succeed).
        retry_after: Seconds the server asked to wait, from ``Retry-After``.
        context_overflow: Whether the server refused the request as longer than the
            model's context window (a shorter history may succeed, the same one never).
    """

    what: str
    status_code: int | None = None
    throttled: bool = False
    retry_after: float | None = None
    context_overflow: bool = False


def says_context_overflow(message: str) -> bool:
    """Whether an error's *message* says the request did not fit the context window.

    Only a client error's message means it (a 400, or a 413 from a proxy): a server error
    that mentions a context length is the server's failure, and the caller checks that.
    """
    lowered = message.lower()
    return any(phrase in lowered for phrase in CONTEXT_OVERFLOW_PHRASES)


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
