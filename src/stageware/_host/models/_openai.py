"""A ``Model`` backed by an OpenAI-compatible chat-completions endpoint.

``OpenAIModel`` sends the conversation with ``openai.AsyncOpenAI`` (OpenAI itself, or a
local server that speaks the same API: vLLM, llama.cpp, Ollama, LM Studio) and streams the
answer back as Converse ``StreamEvent`` dicts. The payload conversion lives in
``_openai_convert``; this module owns the client, the request and error reporting.

The client runs on asyncio and on trio: its HTTP stack (httpx2/httpcore2) picks a trio or
an AnyIO network backend for the running loop.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Self, cast, final

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

from ._errors import ModelError
from ._openai_convert import (
    StreamFormatError,
    StreamTranslator,
    convert_messages,
    convert_tool_choice,
    convert_tool_specs,
)

__all__ = ["ModelError", "OpenAIModel"]

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
        self._client = client or _own_client(base_url, api_key)
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
        Raises ``ModelError`` when the call fails, and ``ValueError`` before any request
        when the conversation holds a block chat completions cannot carry.
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
            raise self._model_error(error) from error

        translator = StreamTranslator()
        # `async with` closes the HTTP response when the caller stops iterating early.
        async with response:
            for event in translator.start():
                yield event
            while True:
                try:
                    chunk = await anext(response)
                except StopAsyncIteration:
                    break
                except openai.APIError as error:
                    raise self._model_error(error) from error
                try:
                    events = translator.feed(chunk)
                except StreamFormatError as error:
                    raise self._model_error(error) from error
                for event in events:
                    yield event
            try:
                events = translator.finish(round((time.monotonic() - started) * 1000))
            except StreamFormatError as error:
                raise self._model_error(error) from error
        for event in events:
            yield event

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
            self._client = _own_client(str(self._client.base_url), self._client.api_key)
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
        return f"OpenAIModel(model_id={self.model_id!r}, base_url={str(self._client.base_url)!r})"

    def _model_error(self, error: Exception) -> ModelError:
        base_url = str(self._client.base_url)
        where = f"model {self.model_id!r} at {base_url}"
        status_code: int | None = None
        if isinstance(error, openai.APIStatusError):
            status_code = error.status_code
            reason = error.response.reason_phrase
            what = f"HTTP {status_code} {reason}: {_detail(error)}"
            if error.request_id:
                what += f" (request id {error.request_id})"
        elif isinstance(error, openai.APITimeoutError):
            what = "request timed out"
        elif isinstance(error, openai.APIConnectionError):
            what = f"connection failed: {error.__cause__ or error.message}"
        elif isinstance(error, openai.APIError):
            what = f"error in the response stream: {_detail(error)}"
        else:
            what = f"malformed response stream: {error}"
        return ModelError(
            f"{where}: {what}", model_id=self.model_id, base_url=base_url, status_code=status_code
        )


def _own_client(base_url: str | None, api_key: str | None) -> openai.AsyncOpenAI:
    """A client for the model to own.

    Its HTTP client is a plain one, not ``openai``'s default wrapper: that wrapper closes
    itself on garbage collection by scheduling the close on whatever event loop is running
    then, which for a client left behind on a finished loop is the wrong one and fails
    there, in somebody else's code.
    """
    return openai.AsyncOpenAI(
        base_url=base_url, api_key=api_key, http_client=openai.DefaultAsyncHttpxClient()
    )


def _detail(error: openai.APIError) -> str:
    # OpenAI-style error bodies carry a readable `message`; `error.message` repeats the
    # status code and the whole body, so it is only the fallback.
    body = error.body
    if isinstance(body, Mapping):
        message = cast("Mapping[str, object]", body).get("message")
        if isinstance(message, str) and message:
            return message
    return error.message
