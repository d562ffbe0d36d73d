"""The errors a model call ends with: any model may raise them, the host acts on them.

They live apart from the adapters so that a custom model can raise
``ModelThrottledError`` (and have the agent retry it) without the ``openai`` extra.
"""

from __future__ import annotations

__all__ = [
    "ContextWindowOverflowError",
    "ModelError",
    "ModelThrottledError",
    "StreamAssemblyError",
]


class ModelError(Exception):
    """A model call failed: the server refused it, could not be reached, or broke the stream.

    An adapter's original exception (an ``openai.APIError`` for HTTP and connection
    failures) is the ``__cause__``. ``model_id`` and ``base_url`` are ``None`` when the
    error does not come from an adapter that knows them (a custom model's stream that the
    host could not assemble, say). A ``base_url`` never carries a password.
    """

    def __init__(
        self,
        message: str,
        *,
        model_id: str | None = None,
        base_url: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.model_id = model_id
        """The model that was called, if known."""
        self.base_url = base_url
        """The endpoint that was called (with any password redacted), if known."""
        self.status_code = status_code
        """The HTTP status of the response, or ``None`` when there was no error response."""


class ModelThrottledError(ModelError):
    """The provider is throttling: the same request may succeed later.

    The agent retries it with backoff (``Agent(retry_strategy=...)``). Raise it from a
    custom model for a rate limit or a "too many requests" answer, with the wait the
    provider asked for, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        model_id: str | None = None,
        base_url: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, model_id=model_id, base_url=base_url, status_code=status_code)
        self.retry_after = retry_after
        """Seconds the provider asked to wait before the next request (``Retry-After``)."""


class ContextWindowOverflowError(ModelError):
    """The request does not fit the model's context window: the conversation is too long.

    Retrying the same request cannot help; a shorter history can. Adapters raise it for
    the provider's own "too many tokens" answer (an HTTP 400 naming the context length,
    Bedrock's validation error about the input length); a custom model raises it for the
    same condition, so that context management (trimming, summarising) can act on one
    error type whatever the provider.
    """


class StreamAssemblyError(ModelError, ValueError):
    """A model's event stream cannot be turned into a message.

    Raised for an event that is not a well-formed Converse stream event (it names the
    event and its position), and for a stream that ended without ``messageStop``, sent a
    second one, carried no content, mixed kinds of content in one block, or streamed tool
    input without the ``contentBlockStart`` naming the tool; and for a model turn whose
    tool calls repeat a ``toolUseId``. Also a ``ValueError``, as it was before it became a
    ``ModelError``.
    """

    def __init__(
        self, message: str, *, event_index: int | None = None, event: object = None
    ) -> None:
        super().__init__(message)
        self.event_index = event_index
        """The position of the offending event in the stream (0 for the first), if any."""
        self.event = event
        """The offending event, if the error is about one."""
