"""What went wrong with an OpenAI-compatible call, in words a person can act on.

``_openai`` catches the failures of a request and its stream: ``openai`` exceptions (an
HTTP error, a refused or reset connection, a timeout, an error event), a body the SSE
decoder could not parse, a stream that broke the chat-completions protocol or ended
early. :func:`describe` turns each into a ``Failure`` (``_http_failures``, shared with the
other adapters): what happened, the HTTP status, whether it was throttling worth a retry
(with the wait the server asked for), and whether the server refused a conversation too
long for the model's context window.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, cast

import openai

from ._http_failures import (
    Failure,
    describe_cause,
    quote,
    retry_after_seconds,
    says_context_overflow,
)
from ._openai_convert import IncompleteStreamError, StreamFormatError

__all__ = ["describe"]

# Statuses that mean "too busy now, the same request may succeed later".
_THROTTLING_STATUSES: Final = frozenset({429, 529})
# The error codes and types OpenAI-compatible servers give a conversation longer than the
# model's context window: OpenAI's and OpenRouter's code, llama.cpp's server's type. Servers
# that send only a message are read by `says_context_overflow`.
_OVERFLOW_CODES: Final = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# A context-window refusal is a client error; 413 is what some proxies send for a body too
# large. A 5xx that happens to mention a context length is a server failure, not this.
_OVERFLOW_STATUSES: Final = frozenset({400, 413, 422})


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
            f"character {error.pos}): {quote(error.doc)}"
        )
    return Failure(f"malformed response stream: {type(error).__name__}: {error}")


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
    return says_context_overflow(_detail(error))


def _detail(error: openai.APIError) -> str:
    # OpenAI-style error bodies carry a readable `message`; `error.message` repeats the
    # status code and the whole body, so it is only the fallback.
    body = error.body
    if isinstance(body, Mapping):
        message = cast("Mapping[str, object]", body).get("message")
        if isinstance(message, str) and message:
            return message
    return error.message
