"""What went wrong with an OpenAI-compatible call, in words a person can act on.

``_openai`` catches the failures of a request and its stream: ``openai`` exceptions (an
HTTP error, a refused or reset connection, a timeout, an error event), a body the SSE
decoder could not parse, a stream that broke the chat-completions protocol or ended
early. :func:`describe` turns each into a :class:`Failure`: what happened, the HTTP status,
whether it was throttling worth a retry (with the wait the server asked for), and whether
the server refused a conversation too long for the model's context window.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Final, cast, final

import openai

from stageware._host._shorten import shorten

from ._openai_convert import IncompleteStreamError, StreamFormatError

__all__ = ["Failure", "describe", "describe_cause", "quote_body", "retry_after_seconds"]

# How much of a response body or an SSE event's data a message quotes.
_MAX_QUOTE: Final = 300
# How deep a message follows an exception's cause chain.
_MAX_CAUSES: Final = 8

# Statuses that mean "too busy now, the same request may succeed later".
_THROTTLING_STATUSES: Final = frozenset({429, 529})
# The error codes and types OpenAI-compatible servers give a conversation longer than the
# model's context window: OpenAI's and OpenRouter's code, llama.cpp's server's type.
_OVERFLOW_CODES: Final = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# The same refusal in words, for servers that send only a message (lowercased): OpenAI,
# vLLM, OpenRouter and most hosted servers ("This model's maximum context length is 8192
# tokens"), vLLM's newer "exceeds the max_model_len", llama.cpp's "the request exceeds the
# available context size", LiteLLM's proxy ("ContextWindowExceededError", "context window
# exceeded"), Anthropic-style "prompt is too long", Bedrock-style "input is too long".
_OVERFLOW_WORDS: Final = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|max_model_len"
    r"|exceeds? the available context size|context ?window ?exceeded"
    r"|prompt is too long|input is too long"
)
# A context-window refusal is a client error; 413 is what some proxies send for a body too
# large. A 5xx that happens to mention a context length is a server failure, not this.
_OVERFLOW_STATUSES: Final = frozenset({400, 413, 422})


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


def describe(error: Exception) -> Failure:
    """Describe a failure of the request or of its response stream."""
    if isinstance(error, openai.APIStatusError):
        return _describe_status(error)
    if isinstance(error, openai.APITimeoutError):
        cause = error.__cause__
        return Failure("request timed out" + (f" ({describe_cause(cause)})" if cause else ""))
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        return Failure(f"connection failed: {describe_cause(cause) if cause else error.message}")
    if isinstance(error, openai.APIError):
        return Failure(f"error in the response stream: {_detail(error)}")
    if isinstance(error, IncompleteStreamError):
        return Failure(str(error))
    if isinstance(error, StreamFormatError):
        return Failure(f"malformed response stream: {error}")
    if isinstance(error, json.JSONDecodeError):
        # The SSE decoder parses each event's data; the document is that event's data.
        return Failure(
            f"malformed response stream: an event's data is not JSON ({error.msg}, at "
            f"character {error.pos}): {_quote(error.doc)}"
        )
    return Failure(f"malformed response stream: {type(error).__name__}: {error}")


def describe_cause(error: BaseException) -> str:
    """An exception and the root of its cause chain, each as its type and its text.

    Transport errors are often wrapped several times without text of their own
    (``ReadError('')`` around ``ReadError('')`` around ...); the OS error at the bottom
    (``ConnectionResetError: [Errno 104] ...``) is what tells a reset from a refusal. So
    the chain is followed through suppressed contexts too, and the links in between that
    say nothing new are left out.
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


def quote_body(body: bytes) -> str:
    """The start of a response body, for a message about it."""
    return _quote(body.decode("utf-8", errors="replace"))


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a throttling response asked for, in seconds, or ``None``.

    Reads ``retry-after-ms`` (OpenAI's, more precise) and then ``Retry-After``, as seconds
    or as an HTTP date; *now* is the current time (``time.time()``) for a date.
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


def _describe_status(error: openai.APIStatusError) -> Failure:
    status_code = error.status_code
    what = f"HTTP {status_code} {error.response.reason_phrase}: {_detail(error)}"
    if error.request_id:
        what += f" (request id {error.request_id})"
    # OpenAI answers an exhausted quota with 429 too; waiting will not refill it. 529 is
    # Anthropic's "overloaded", which proxies in front of it (LiteLLM's) pass through.
    throttled = status_code in _THROTTLING_STATUSES and "insufficient_quota" not in (
        error.code,
        error.type,
    )
    retry_after = retry_after_seconds(error.response.headers) if throttled else None
    return Failure(
        what,
        status_code=status_code,
        throttled=throttled,
        retry_after=retry_after,
        context_overflow=status_code in _OVERFLOW_STATUSES and _is_overflow(error),
    )


def _is_overflow(error: openai.APIStatusError) -> bool:
    """Whether a client error says the conversation does not fit the context window."""
    if error.code in _OVERFLOW_CODES or error.type in _OVERFLOW_CODES:
        return True
    return _OVERFLOW_WORDS.search(_detail(error).lower()) is not None


def _detail(error: openai.APIError) -> str:
    # OpenAI-style error bodies carry a readable `message`; `error.message` repeats the
    # status code and the whole body, so it is only the fallback.
    body = error.body
    if isinstance(body, Mapping):
        message = cast("Mapping[str, object]", body).get("message")
        if isinstance(message, str) and message:
            return message
    return error.message


def _non_negative(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _quote(text: str) -> str:
    return repr(shorten(text.strip(), _MAX_QUOTE))
