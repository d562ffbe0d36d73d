"""A ``Model`` backed by an OpenAI-compatible chat-completions endpoint.

``OpenAIModel`` sends the conversation with ``openai.AsyncOpenAI`` (OpenAI itself, or a
local server that speaks the same API: vLLM, llama.cpp, Ollama, LM Studio) and streams the
answer back as Converse ``StreamEvent`` dicts. The payload conversion lives in
``_openai_convert``; this module owns the client, the request and error reporting.

The client runs on asyncio and on trio: its HTTP stack (httpx2/httpcore2) picks a trio or
an AnyIO network backend for the running loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Self, final

import openai
from openai.types.chat import ChatCompletionChunk

from stageware._generated.payloads import (
    Messages,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
)
from stageware._host._running_loop import running_loop

from ._credentials import hidden_texts, redact_url, split_credentials
from ._errors import ModelError, ModelThrottledError
from ._openai_convert import (
    StreamFormatError,
    StreamTranslator,
    convert_messages,
    convert_tool_choice,
    convert_tool_specs,
)
from ._openai_errors import Failure, describe, quote_body

__all__ = ["ModelError", "ModelThrottledError", "OpenAIModel"]

# Request fields the adapter sets itself; `params` may not override them.
_RESERVED_PARAMS = frozenset(
    {"model", "messages", "stream", "stream_options", "tools", "tool_choice"}
)


@final
class OpenAIModel:
    """A ``Model`` that streams from an OpenAI-compatible ``/chat/completions`` endpoint.

    Pass either a ready ``client`` or ``base_url``/``api_key`` for one the model creates
    (``api_key=None`` falls back to ``OPENAI_API_KEY``, as ``openai`` does). *params* are
    extra arguments for ``client.chat.completions.create``, such as ``temperature``,
    ``max_completion_tokens`` or ``extra_body`` for server-specific fields.

    A client the model created is closed by ``aclose()`` (or ``async with``); a client that
    was passed in belongs to the caller. Close it: ``openai``'s fallback close on garbage
    collection works only on asyncio, so on trio an unclosed client leaks its sockets. A
    model that created its own client starts a new one when it finds itself on another
    event loop (each synchronous ``agent(...)`` call runs its own); a client passed in must
    be used within one event loop: its pooled connections belong to the loop
    that opened them (trio, having no loop object, tolerates a new ``trio.run``).

    Every failure is a ``ModelError`` naming the model, the endpoint and what went wrong,
    never an answer that looks complete: an HTTP error, a refused or reset connection, a
    body that is not a stream, an event that is not JSON, a stream without a choice or a
    finish reason. A 429 is a ``ModelThrottledError`` carrying the server's
    ``Retry-After``, which the agent retries with backoff; ``openai``'s own client retries
    it first (``max_retries``, 2 by default), so pass a client with ``max_retries=0`` to
    leave every retry to the agent. A password in ``base_url`` is sent as HTTP basic auth,
    as ``httpx`` would, but never appears in errors, ``repr()`` or the HTTP log.
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("pass either client or base_url/api_key, not both")
        reserved = sorted(_RESERVED_PARAMS.intersection(params or {}))
        if reserved:
            raise ValueError(f"params may not set {reserved}: OpenAIModel sets them per call")
        self.model_id = model_id
        """The model name sent with every request."""
        self._owns_client = client is None
        # The URL as given, credentials included, to build a client for another event
        # loop; the client itself never sees them in its URL.
        self._base_url = (
            str(client.base_url)
            if client is not None
            # Resolved here rather than by `openai`, so credentials in it are split off too.
            else base_url
            if base_url is not None
            else os.environ.get("OPENAI_BASE_URL")
        )
        self._client = client or _own_client(self._base_url, api_key)
        self._client_loop: object = None
        self._params: Mapping[str, Any] = MappingProxyType(dict(params or {}))

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The client requests go through."""
        return self._client

    @property
    def params(self) -> Mapping[str, Any]:
        """Extra arguments passed to every ``create`` call (read-only)."""
        return self._params

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream the model's answer to *messages* as Converse stream events.

        Keyword arguments the host passes for other models (``model_state=`` and the like)
        are ignored. Closing the generator early (``aclose()``) releases the connection.

        Raises:
            ModelThrottledError: The server answered 429 (other than for an exhausted
                quota).
            ModelError: The call failed, or the response was not a complete stream.
            ValueError: Before any request, when the conversation holds a block chat
                completions cannot carry.
        """
        del kwargs  # Part of the Model protocol; nothing here uses them.
        request_messages = convert_messages(messages, system_prompt, system_prompt_content)
        tools = convert_tool_specs(tool_specs) if tool_specs else None
        # Servers reject a tool choice without tools.
        choice = None if tools is None or tool_choice is None else convert_tool_choice(tool_choice)
        # `params` is an open mapping, so type checkers cannot tell which `create` overload
        # the call selects and infer Any; `stream=True` picks the streaming one, whose
        # result type is declared here.
        response: openai.AsyncStream[ChatCompletionChunk]
        started = time.monotonic()
        try:
            response = await self._client_for_running_loop().chat.completions.create(
                model=self.model_id,
                messages=request_messages,
                stream=True,
                stream_options={"include_usage": True},
                tools=openai.omit if tools is None else tools,
                tool_choice=openai.omit if choice is None else choice,
                **self._params,
            )
        except openai.APIError as error:
            raise self._model_error(describe(error)) from error

        translator = StreamTranslator()
        # `async with` closes the HTTP response when the caller stops iterating early.
        async with response:
            await self._refuse_a_plain_body(response)
            for event in translator.start():
                yield event
            while True:
                try:
                    chunk = await anext(response)
                except StopAsyncIteration:
                    break
                # ValueError: an event's data that is not JSON, from the SSE decoder.
                except (openai.APIError, ValueError) as error:
                    raise self._model_error(describe(error)) from error
                try:
                    events = translator.feed(chunk)
                except StreamFormatError as error:
                    raise self._model_error(describe(error)) from error
                for event in events:
                    yield event
            try:
                events = translator.finish(round((time.monotonic() - started) * 1000))
            except StreamFormatError as error:
                raise self._model_error(describe(error)) from error
        for event in events:
            yield event

    async def _refuse_a_plain_body(self, response: openai.AsyncStream[ChatCompletionChunk]) -> None:
        """Raise if the server answered the streaming request with a single JSON body.

        Its SSE decoder would find no events in it, and the answer would look empty
        rather than unread. Only a JSON content type is refused: an event stream sent
        under a wrong text type still streams.
        """
        content_type = response.response.headers.get("content-type", "")
        if content_type.partition(";")[0].strip().lower() != "application/json":
            return
        try:
            body = quote_body(await response.response.aread())
        except Exception as error:  # The body is only quoted; failing to read it is no news.
            body = f"(unreadable: {type(error).__name__})"
        raise self._model_error(
            Failure(
                f"the server sent a non-streaming body ({content_type}) in answer to a "
                f"streaming request: {body}"
            )
        )

    def _client_for_running_loop(self) -> openai.AsyncOpenAI:
        """The client, replaced by a fresh one when the model moved to another event loop.

        Pooled connections belong to the loop that opened them. A synchronous
        ``agent(...)`` runs each call on a loop of its own, so a client the model created
        would otherwise fail on the second call with "Event loop is closed". A client the
        caller passed in is the caller's to manage and is never replaced.
        """
        loop = running_loop()
        if self._owns_client and self._client_loop is not None and self._client_loop is not loop:
            # Not copy(): that would share the HTTP client and its dead connections.
            self._client = _own_client(self._base_url, self._client.api_key)
        self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client if this model created it."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        base_url = redact_url(str(self._client.base_url))
        return f"OpenAIModel(model_id={self.model_id!r}, base_url={base_url!r})"

    def _model_error(self, failure: Failure) -> ModelError:
        base_url = redact_url(str(self._client.base_url))
        message = f"model {self.model_id!r} at {base_url}: {failure.what}"
        # The URL above is redacted; this catches a library's text that quotes it whole.
        for secret in hidden_texts(self._base_url or ""):
            message = message.replace(secret, "***")
        if failure.throttled:
            return ModelThrottledError(
                message,
                retry_after=failure.retry_after,
                model_id=self.model_id,
                base_url=base_url,
                status_code=failure.status_code,
            )
        return ModelError(
            message, model_id=self.model_id, base_url=base_url, status_code=failure.status_code
        )


def _own_client(base_url: str | None, api_key: str | None) -> openai.AsyncOpenAI:
    """A client for the model to own.

    Its HTTP client is a plain one, not ``openai``'s default wrapper: that wrapper closes
    itself on garbage collection by scheduling the close on whatever event loop is running
    then, which for a client left behind on a finished loop is the wrong one and fails
    there, in somebody else's code.

    Credentials in *base_url* become the HTTP client's basic auth, which is what ``httpx``
    makes of them in a URL anyway, so that no request URL (logged whole by ``httpx``)
    carries them.
    """
    if base_url is None:
        return openai.AsyncOpenAI(api_key=api_key, http_client=openai.DefaultAsyncHttpxClient())
    bare_url, credentials = split_credentials(base_url)
    http_client = (
        openai.DefaultAsyncHttpxClient()
        if credentials is None
        else openai.DefaultAsyncHttpxClient(auth=(credentials.username, credentials.password))
    )
    return openai.AsyncOpenAI(base_url=bare_url, api_key=api_key, http_client=http_client)
