"""What went wrong with a Bedrock call, in words a person can act on.

botocore reports a failed ConverseStream call in several ways: a ``ClientError`` for an
error response (the service's error code in ``x-amzn-ErrorType``, the HTTP status, a
JSON body with a ``message``); an ``EventStreamError`` (a ``ClientError`` too) for an
exception the service sends as a message of the event stream once the response has
started; its own exceptions for a request it cannot build or send (bad parameters, no
credentials, no region, a refused connection, a timeout); and the event-stream parser's
errors (a bad CRC, a truncated frame). :func:`describe` turns each into a
:class:`Failure`: what happened, the HTTP status, and whether to retry (throttling) or to
shorten the conversation (context overflow). None of botocore's texts quotes a
credential; the endpoint named is the region's.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Final, final

import botocore.eventstream
import botocore.exceptions
import botocore.parsers
import urllib3.exceptions

__all__ = ["Failure", "StreamFailedError", "describe"]

# Error codes that mean "not now": the same request may succeed later. Mid-stream
# exceptions arrive with the first letter in lower case (`throttlingException`), so codes
# are compared in lower case.
_THROTTLING_CODES: Final = frozenset(
    {
        "throttlingexception",
        "throttling",
        "toomanyrequestsexception",
        "serviceunavailableexception",
        "modelnotreadyexception",
    }
)
_THROTTLING_STATUSES: Final = frozenset({429, 503})
# What Bedrock's ValidationException says when the conversation does not fit the model's
# context window; the wording depends on the model behind it.
_OVERFLOW_TEXTS: Final = (
    "input is too long",
    "too long for requested model",
    "exceed context limit",
    "exceeds the context window",
    "too many total text bytes",
    "prompt is too long",
    "context length",
)
_MAX_CAUSES: Final = 8


@final
@dataclass(frozen=True, slots=True)
class Failure:
    """One failed call, described.

    Attributes:
        what: What went wrong, as the end of a sentence that names the model.
        status_code: The HTTP status of an error response.
        throttled: Whether the service was throttling (retrying later may succeed).
        retry_after: Seconds the service asked to wait, from ``Retry-After``.
        overflow: Whether the conversation does not fit the context window.
    """

    what: str
    status_code: int | None = None
    throttled: bool = False
    retry_after: float | None = None
    overflow: bool = False


@final
class StreamFailedError(Exception):
    """A response that cannot be passed on as an answer; the model names itself in it."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.what)
        self.failure = failure


def describe(error: BaseException) -> Failure:
    """Describe a failure of the request or of its response stream."""
    if isinstance(error, StreamFailedError):
        return error.failure
    if isinstance(error, botocore.exceptions.EventStreamError):
        return _describe_service_error(error, mid_stream=True)
    if isinstance(error, botocore.exceptions.ClientError):
        return _describe_service_error(error, mid_stream=False)
    if isinstance(error, botocore.exceptions.ParamValidationError):
        # botocore lists each problem on a line of its own; a message stays on one line.
        problems = str(error).replace("\n", " ")
        return Failure(f"the request is not valid for ConverseStream: {problems}")
    if isinstance(error, botocore.eventstream.ParserError | botocore.parsers.ResponseParserError):
        return Failure(f"malformed response stream: {type(error).__name__}: {error}")
    if isinstance(
        error,
        botocore.exceptions.ReadTimeoutError | botocore.exceptions.ConnectTimeoutError,
    ):
        return Failure(f"request timed out ({_describe_chain(error)})")
    if isinstance(
        error,
        botocore.exceptions.HTTPClientError
        | botocore.exceptions.ConnectionError
        | botocore.exceptions.ResponseStreamingError
        | urllib3.exceptions.HTTPError
        | OSError,
    ):
        return Failure(f"connection failed: {_describe_chain(error)}")
    if isinstance(error, botocore.exceptions.BotoCoreError):
        # No credentials, no region, an unknown profile: botocore's text says which.
        return Failure(f"{type(error).__name__}: {error}")
    return Failure(f"unexpected failure: {_describe_chain(error)}")


def _describe_service_error(error: botocore.exceptions.ClientError, *, mid_stream: bool) -> Failure:
    details = error.response.get("Error", {})
    code = str(details.get("Code", "") or "Unknown")
    message = str(details.get("Message", "") or "(no message)")
    metadata = error.response.get("ResponseMetadata", {})
    status = None if mid_stream else metadata.get("HTTPStatusCode")
    headers: Mapping[str, str] = metadata.get("HTTPHeaders", {})
    where = "in the response stream" if mid_stream else f"HTTP {status}"
    what = f"{code} {where}: {message}"
    request_id = metadata.get("RequestId")
    if request_id:
        what += f" (request id {request_id})"
    throttled = code.lower() in _THROTTLING_CODES or status in _THROTTLING_STATUSES
    overflow = code.lower() == "validationexception" and any(
        text in message.lower() for text in _OVERFLOW_TEXTS
    )
    return Failure(
        what,
        status_code=status,
        throttled=throttled and not overflow,
        retry_after=_retry_after(headers) if throttled else None,
        overflow=overflow,
    )


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds (as a number or an HTTP date), if the response had one."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, when.timestamp() - time.time())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _describe_chain(error: BaseException) -> str:
    """*error* and the root of its cause chain: the OS error tells a reset from a refusal."""
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in chain and len(chain) < _MAX_CAUSES:
        chain.append(link)
        link = link.__cause__ or link.__context__
    shown = [chain[0]] if len(chain) == 1 else [chain[0], chain[-1]]
    return ", caused by ".join(
        f"{type(link).__name__}: {link}" if str(link) else type(link).__name__ for link in shown
    )
