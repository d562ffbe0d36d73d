"""What went wrong with an Anthropic call, in words a person can act on.

``_anthropic`` catches the failures of a request and its stream: ``anthropic``
exceptions (an HTTP error, an ``error`` event in the stream, a refused connection, a
timeout, credentials it could not resolve), ``httpx2`` transport errors (a connection
reset while the stream is read), an event's data that is not JSON, a stream that broke
the protocol or ended early. :func:`describe` turns each into a ``Failure``.

Throttling, which the agent retries with backoff: HTTP 429 (but not a spent limit,
which waiting does not refill), HTTP 529 ("overloaded"), and an ``overloaded_error`` or
``rate_limit_error`` event in the middle of a stream. A 400 saying the prompt is too long
(or that input and ``max_tokens`` together exceed the context limit) is a context-window
overflow, read by the phrases all HTTP adapters share (``_http_failures``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, cast

import anthropic
import httpx2

from ._anthropic_stream import ContextWindowFilledError, IncompleteStreamError, StreamFormatError
from ._http_failures import (
    Failure,
    describe_cause,
    quote,
    retry_after_seconds,
    says_context_overflow,
)

__all__ = ["describe"]

# Error types in a response body or an error event that mean "try again later".
_THROTTLING_TYPES: Final = frozenset({"rate_limit_error", "overloaded_error"})
# 429 answers that no wait will fix: a spend limit reached.
_NOT_THROTTLING_CODES: Final = frozenset(
    {"contract_spend_limit_reached", "enforced_spend_limit_reached"}
)
# A prompt that does not fit is an `invalid_request_error` (HTTP 400; 413 from some
# proxies), worded as `says_context_overflow` knows: "prompt is too long: 210000 tokens >
# 200000 maximum", "input length and `max_tokens` exceed context limit: 198000 + 4096 >
# 200000".
_OVERFLOW_STATUSES: Final = frozenset({400, 413})


def describe(error: Exception) -> Failure:
    """Describe a failure of the request or of its response stream."""
    if isinstance(error, anthropic.APIStatusError):
        return _describe_status(error)
    if isinstance(error, anthropic.APITimeoutError):
        cause = error.__cause__
        return Failure("request timed out" + (f" ({describe_cause(cause)})" if cause else ""))
    if isinstance(error, anthropic.APIConnectionError):
        cause = error.__cause__
        return Failure(f"connection failed: {describe_cause(cause) if cause else error.message}")
    if isinstance(error, anthropic.APIError):
        return Failure(f"error in the response stream: {error.message}")
    if isinstance(error, anthropic.AnthropicError):
        # Before any response: credentials the SDK could not resolve, say.
        return Failure(f"request failed: {type(error).__name__}: {error}")
    if isinstance(error, httpx2.TimeoutException):
        return Failure(f"timed out reading the response ({describe_cause(error)})")
    if isinstance(error, httpx2.TransportError):
        # Raised while the stream is read: the SDK wraps only the request's own failures.
        return Failure(f"the connection broke during the response: {describe_cause(error)}")
    if isinstance(error, ContextWindowFilledError):
        return Failure(str(error), context_overflow=True)
    if isinstance(error, IncompleteStreamError):
        return Failure(str(error))
    if isinstance(error, StreamFormatError):
        return Failure(f"malformed response stream: {error}")
    if isinstance(error, json.JSONDecodeError):
        return Failure(
            f"malformed response stream: an event's data is not JSON ({error.msg}, at "
            f"character {error.pos}): {quote(error.doc)}"
        )
    return Failure(f"malformed response stream: {type(error).__name__}: {error}")


def _describe_status(error: anthropic.APIStatusError) -> Failure:
    status_code = error.status_code
    detail = error.api_message or _body_text(error.body) or error.message
    error_type = error.type or _body_error_type(error.body)
    if status_code == 200:
        # An `error` event in a stream that had begun: the status is the stream's.
        what = f"error event in the response stream ({error_type or 'untyped'}): {detail}"
        status: int | None = None
    else:
        phrase = error.response.reason_phrase  # empty for 529, which has no standard name
        what = f"HTTP {status_code}{f' {phrase}' if phrase else ''}: {detail}"
        status = status_code
    if error.request_id:
        what += f" (request id {error.request_id})"
    throttled = (
        status_code in (429, 529) or (status_code == 200 and error_type in _THROTTLING_TYPES)
    ) and error.error_code not in _NOT_THROTTLING_CODES
    retry_after = retry_after_seconds(error.response.headers) if status is not None else None
    overflow = status_code in _OVERFLOW_STATUSES and says_context_overflow(detail)
    return Failure(
        what,
        status_code=status,
        throttled=throttled,
        retry_after=retry_after if throttled else None,
        context_overflow=overflow,
    )


def _body_text(body: object) -> str | None:
    if isinstance(body, str):
        return quote(body) if body.strip() else None
    return None


def _body_error_type(body: object) -> str | None:
    if not isinstance(body, Mapping):
        return None
    inner = cast("Mapping[str, object]", body).get("error")
    if isinstance(inner, Mapping):
        kind = cast("Mapping[str, object]", inner).get("type")
        return kind if isinstance(kind, str) else None
    return None
