"""What went wrong with a Bedrock call, in words a person can act on.

botocore reports a failed ConverseStream call in several ways: a ``ClientError`` for an
error response (the service's error code in ``x-amzn-ErrorType``, the HTTP status, a
JSON body with a ``message``); an ``EventStreamError`` (a ``ClientError`` too) for an
exception the service sends as a message of the event stream once the response has
started; its own exceptions for a request it cannot build or send (bad parameters, no
credentials, no region, a refused connection, a timeout); and the event-stream parser's
errors (a bad CRC, a truncated frame). :func:`describe` turns each into a
:class:`Failure`: what happened, the HTTP status, and whether to retry (throttling) or to
shorten the conversation (context overflow). :class:`Failure`, the cause chain's
description and the ``Retry-After`` reading are the ones every HTTP adapter shares
(``_http_failures``). None of botocore's texts quotes a credential; the endpoint named is
the region's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

import botocore.eventstream
import botocore.exceptions
import botocore.parsers
import urllib3.exceptions

from ._http_failures import (
    Failure,
    describe_cause,
    retry_after_seconds,
    says_context_overflow,
)

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
        return Failure(f"request timed out ({describe_cause(error)})")
    if isinstance(
        error,
        botocore.exceptions.HTTPClientError
        | botocore.exceptions.ConnectionError
        | botocore.exceptions.ResponseStreamingError
        | urllib3.exceptions.HTTPError
        | OSError,
    ):
        return Failure(f"connection failed: {describe_cause(error)}")
    if isinstance(error, botocore.exceptions.BotoCoreError):
        # No credentials, no region, an unknown profile: botocore's text says which.
        return Failure(f"{type(error).__name__}: {error}")
    return Failure(f"unexpected failure: {describe_cause(error)}")


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
    # What the ValidationException says depends on the model behind it; the phrases are
    # every adapter's (`_http_failures`).
    overflow = code.lower() == "validationexception" and says_context_overflow(message)
    return Failure(
        what,
        status_code=status,
        throttled=throttled and not overflow,
        retry_after=retry_after_seconds(headers) if throttled else None,
        context_overflow=overflow,
    )
