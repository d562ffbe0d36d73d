"""A ``Model`` backed by an OpenAI-compatible chat-completions endpoint.

``OpenAIModel`` sends the conversation with ``openai.AsyncOpenAI`` (OpenAI itself, or a
local server that speaks the same API: vLLM, llama.cpp, Ollama, LM Studio) and streams the
answer back as Converse ``StreamEvent`` dicts. The payload conversion lives in
``_openai_convert``, the encoding of the request body in ``_openai_request``, the clients
models share in ``_openai_clients``; this module makes the call and reports its errors.

The client runs on asyncio and on trio: its HTTP stack (httpx2/httpcore2) picks a trio or
an AnyIO network backend for the running loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Literal, Self, final

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from stageware._generated.payloads import (
    Messages,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
)

from ._credentials import hidden_texts, redact_url
from ._errors import ContextWindowOverflowError, ModelError, ModelThrottledError
from ._http_failures import Failure, quote
from ._openai_clients import ClientSettings, shared_clients
from ._openai_convert import (
    StreamFormatError,
    StreamTranslator,
    convert_messages,
    convert_tool_choice,
)
from ._openai_errors import describe
from ._openai_output import response_format
from ._openai_request import RequestEncoder
from ._output_schema import OutputSchema

__all__ = ["ModelError", "ModelThrottledError", "OpenAIModel"]

# Request fields the adapter sets itself; `params` may not override them.
_RESERVED_PARAMS = frozenset(
    {"model", "messages", "stream", "stream_options", "tools", "tool_choice"}
)


@final
class OpenAIModel:
    """A ``Model`` that streams from an OpenAI-compatible ``/chat/completions`` endpoint.

    Pass either a ready ``client`` or ``base_url``/``api_key`` (``api_key=None`` falls
    back to ``OPENAI_API_KEY``, as ``openai`` does). *params* are extra arguments for
    ``client.chat.completions.create``, such as ``temperature``,
    ``max_completion_tokens`` or ``extra_body`` for server-specific fields; the request
    carries them as ``create`` would, but stageware encodes the body itself.

    Without a ``client``, models with the same endpoint, API key and ``OPENAI_*``
    environment share one, with its connection pool: one per event
    loop, closed when that loop ends (each synchronous ``agent(...)`` call runs a loop of
    its own). A client passed in is used as it is and belongs to the caller, who closes
    it (``openai``'s fallback close on garbage collection works only on asyncio, so on
    trio an unclosed client leaks its sockets) and uses it within one event loop: its
    pooled connections belong to the loop that opened them (trio, having no loop object,
    tolerates a new ``trio.run``). ``aclose()`` (or ``async with``) closes neither: a
    shared client lives as long as its loop, even after no model uses it (on a
    long-lived loop, models with a key per user want clients of their own).

    Every failure is a ``ModelError`` naming the model, the endpoint and what went wrong,
    never an answer that looks complete: an HTTP error, a refused or reset connection, a
    body that is not a stream, an event that is not JSON, a stream without a choice or a
    finish reason. A refusal of a conversation longer than the model's context window
    (``context_length_exceeded``, or a 400 that says so in the words servers use) is a
    ``ContextWindowOverflowError``. A 429 (or a 529, Anthropic's "overloaded" as a proxy
    passes it on) is a ``ModelThrottledError`` carrying the server's
    ``Retry-After``, which the agent retries with backoff; ``openai``'s own client retries
    it first (``max_retries``, 2 by default), so pass a client with ``max_retries=0`` to
    leave every retry to the agent. A password in ``base_url`` is sent as HTTP basic auth,
    as ``httpx`` would, but never appears in errors, ``repr()`` or the HTTP log.

    In a structured run (``agent(..., output_type=M)``) the model is asked natively, with
    ``response_format={"type": "json_schema", ...}`` (strict when the schema allows
    it). For a server without JSON-schema mode, pass
    ``structured_output="tool"``: the agent then asks through a forced tool call.
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        structured_output: Literal["native", "tool"] = "native",
    ) -> None:
        if structured_output not in ("native", "tool"):
            raise ValueError(
                f"structured_output must be 'native' or 'tool', got {structured_output!r}"
            )
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("pass either client or base_url/api_key, not both")
        reserved = sorted(_RESERVED_PARAMS.intersection(params or {}))
        if reserved:
            raise ValueError(f"params may not set {reserved}: OpenAIModel sets them per call")
        self.model_id = model_id
        """The model name sent with every request."""
        self.supports_structured_output: bool = structured_output == "native"
        """Whether a structured run asks this model with ``response_format`` (native) rather
        than through a forced tool call."""
        self._params: Mapping[str, Any] = MappingProxyType(dict(params or {}))
        self._request = RequestEncoder(model_id, self._params)
        # The URL as given, credentials included, to hide them in error messages; the
        # client itself never sees them in its URL.
        self._base_url = (
            str(client.base_url)
            if client is not None
            # Resolved here rather than by `openai`, so credentials in it are split off too.
            else base_url
            if base_url is not None
            else os.environ.get("OPENAI_BASE_URL")
        )
        # The caller's client, or what to share one by.
        self._client_source = client or ClientSettings.of(self._base_url, api_key)

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The client requests go through (now, on the running loop, if one is running).

        A shared one unless the model was given its own: do not close it.
        """
        source = self._client_source
        return source if isinstance(source, openai.AsyncOpenAI) else shared_clients.peek(source)

    @property
    def params(self) -> Mapping[str, Any]:
        """Extra arguments passed to every ``create`` call (read-only)."""
        return self._params

    def cache_identity(self) -> Mapping[str, object]:
        """Every setting that shapes a request, for ``ResponseCache`` keys.

        The model id, ``params`` and the structured-output mode; not the credentials or
        endpoint (give caches over different endpoints a ``namespace`` each).
        """
        return {
            "model_id": self.model_id,
            "params": dict(self._params),
            "structured_output": "native" if self.supports_structured_output else "tool",
        }

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

        ``output_schema=`` (an ``OutputSchema``, passed by a structured run when
        ``supports_structured_output`` is true) is sent as ``response_format``; other
        keyword arguments the host passes for other models (``model_state=`` and the
        like) are ignored. Closing the generator early (``aclose()``) releases the
        connection.

        Raises:
            ModelThrottledError: The server answered 429 (other than for an exhausted
                quota).
            ModelError: The request could not be prepared (a value in it that is not JSON
                data, a client that cannot be built), the call failed, or the response
                was not a complete stream.
            ValueError: Before any request, when the conversation holds a block chat
                completions cannot carry.
        """
        output_schema = _output_schema(kwargs.get("output_schema"))
        converted = convert_messages(messages, system_prompt, system_prompt_content)
        choice = None if tool_choice is None else convert_tool_choice(tool_choice)
        output = (
            response_format(output_schema)
            if self.supports_structured_output and output_schema is not None
            else None
        )
        source = self._client_source
        try:
            body = self._request.encode(converted, tool_specs, choice, output)
            client = (
                source
                if isinstance(source, openai.AsyncOpenAI)
                else await shared_clients.for_running_loop(source)
            )
        # A value that is not JSON data, or a client that cannot be built (its SSL
        # context, say): failures of this call, reported as the ones after it are.
        except Exception as error:
            failure = Failure(f"could not prepare the request: {type(error).__name__}: {error}")
            raise self._model_error(None, failure) from error
        started = time.monotonic()
        try:
            # What `chat.completions.create` posts, without its transform of the body
            # (see `_openai_request`): the same headers, retries, errors and chunks.
            response = await client.post(
                "/chat/completions",
                content=body,
                cast_to=ChatCompletion,
                options=self._request.options,
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk],
            )
        except openai.APIError as error:
            raise self._model_error(client, describe(error)) from error

        translator = StreamTranslator()
        # `async with` closes the HTTP response when the caller stops iterating early.
        async with response:
            await self._refuse_a_plain_body(client, response)
            for event in translator.start():
                yield event
            while True:
                try:
                    chunk = await anext(response)
                except StopAsyncIteration:
                    break
                # ValueError: an event's data that is not JSON, from the SSE decoder.
                except (openai.APIError, ValueError) as error:
                    raise self._model_error(client, describe(error)) from error
                try:
                    events = translator.feed(chunk)
                except StreamFormatError as error:
                    raise self._model_error(client, describe(error)) from error
                for event in events:
                    yield event
            try:
                events = translator.finish(round((time.monotonic() - started) * 1000))
            except StreamFormatError as error:
                raise self._model_error(client, describe(error)) from error
        for event in events:
            yield event

    async def _refuse_a_plain_body(
        self, client: openai.AsyncOpenAI, response: openai.AsyncStream[ChatCompletionChunk]
    ) -> None:
        """Raise if the server answered the streaming request with a single JSON body.

        Its SSE decoder would find no events in it, and the answer would look empty
        rather than unread. Only a JSON content type is refused: an event stream sent
        under a wrong text type still streams.
        """
        content_type = response.response.headers.get("content-type", "")
        if content_type.partition(";")[0].strip().lower() != "application/json":
            return
        try:
            body = quote(await response.response.aread())
        except Exception as error:  # The body is only quoted; failing to read it is no news.
            body = f"(unreadable: {type(error).__name__})"
        raise self._model_error(
            client,
            Failure(
                f"the server sent a non-streaming body ({content_type}) in answer to a "
                f"streaming request: {body}"
            ),
        )

    async def aclose(self) -> None:
        """Nothing to release: a shared client closes when its loop ends, yours is yours."""

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
        return f"OpenAIModel(model_id={self.model_id!r}, base_url={self._shown_url()!r})"

    def _shown_url(self) -> str:
        """The endpoint without its password, without building a client."""
        source = self._client_source
        return redact_url(
            str(source.base_url) if isinstance(source, openai.AsyncOpenAI) else source.endpoint
        )

    def _model_error(self, client: openai.AsyncOpenAI | None, failure: Failure) -> ModelError:
        """*failure* as the error to raise; *client* is ``None`` when none was got yet."""
        base_url = self._shown_url() if client is None else redact_url(str(client.base_url))
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
        if failure.context_overflow:
            return ContextWindowOverflowError(
                message, model_id=self.model_id, base_url=base_url, status_code=failure.status_code
            )
        return ModelError(
            message, model_id=self.model_id, base_url=base_url, status_code=failure.status_code
        )


def _output_schema(value: object) -> OutputSchema[Any] | None:
    """The ``output_schema=`` a structured run passed, if it is one."""
    # The host passes an OutputSchema[Any]; isinstance cannot see its type argument.
    return value if isinstance(value, OutputSchema) else None  # pyright: ignore[reportUnknownVariableType]
