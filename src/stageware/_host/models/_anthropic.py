"""A ``Model`` backed by Anthropic's Messages API, through the official ``anthropic`` SDK.

``AnthropicModel`` converts the Converse conversation (``_anthropic_request``), streams
``POST /v1/messages`` with ``anthropic.AsyncAnthropic``, and turns the event stream back
into Converse events (``_anthropic_stream``); ``_anthropic_errors`` says what a failure
was, ``_loop_clients`` keeps a client per event loop. This module makes the call.

The SDK's HTTP stack (httpx2) runs on asyncio and on trio, so the model does too.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import AsyncGenerator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Final, Literal, Self, cast, final

import anthropic
import httpx2
from anthropic.resources.messages import AsyncMessages

from stageware._generated.payloads import (
    Messages,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
)

from ._anthropic_errors import describe
from ._anthropic_request import (
    convert_messages,
    convert_system,
    convert_tool_choice,
    convert_tools,
    output_format,
)
from ._anthropic_stream import ContextWindowFilledError, StreamFormatError, StreamTranslator
from ._credentials import hidden_texts, redact_url, split_credentials
from ._errors import ContextWindowOverflowError, ModelError, ModelThrottledError
from ._http_failures import Failure, quote
from ._loop_clients import LoopClients, shared_ssl_context
from ._output_schema import OutputSchema

__all__ = ["AnthropicModel"]

_DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
# Arguments of `messages.create` the adapter sets per call; `params` may not set them.
_RESERVED_PARAMS: Final = frozenset(
    {"model", "messages", "max_tokens", "stream", "system", "tools", "tool_choice"}
)
# What `messages.create` takes, read from the installed SDK.
_CREATE_PARAMS: Final = frozenset(inspect.signature(AsyncMessages.create).parameters) - {"self"}


@final
class AnthropicModel:
    """A ``Model`` that streams from Anthropic's Messages API (or a server that speaks it).

    Args:
        model_id: The model, such as ``"claude-sonnet-4-5"``.
        client: A ready ``anthropic.AsyncAnthropic``; it belongs to the caller, who closes
            it and uses it within one event loop. Not with *base_url* or *api_key*.
        base_url: The endpoint (``None``: ``ANTHROPIC_BASE_URL``, else the SDK's choice:
            a configured profile's, or Anthropic's). A password in it is sent as HTTP
            basic auth and never shown.
        api_key: The API key (``None``: the SDK's own chain, ``ANTHROPIC_API_KEY`` first).
        max_tokens: The most tokens an answer may have (the API requires a limit):
            4096 unless given.
        params: More arguments of ``client.messages.create``: ``thinking`` to turn on
            extended thinking (``{"type": "enabled", "budget_tokens": 2048}``),
            ``stop_sequences``, ``metadata``, ``extra_headers``, ``extra_body`` for
            fields the SDK does not name, ``timeout``. Checked against the installed SDK.
        cache_tools: Mark the end of the tool list as a prompt-cache breakpoint, as
            Strands' ``cache_tools`` does (a ``cachePoint`` entry among the tool specs,
            set by middleware, marks any other place).
        structured_output: How a structured run asks for its object: ``"native"`` uses
            the API's JSON-schema output (``output_config.format``), ``"tool"`` leaves
            it to the host's forced tool, for proxies without the native mode.

    With ``thinking`` on, a ``tool_choice`` that forces a tool (``any`` or a named tool)
    is sent as ``auto``: the API refuses to force a tool while the model thinks. A
    structured run on the tool path then relies on the host's request in words to call
    the output tool, which it repeats within ``output_retries``.
        max_retries: The SDK's own retries of a failed request (2 in the SDK); 0 by
            default, so that throttling reaches the agent's retry strategy. Only used
            when the model builds its client.

    Without a *client*, the model builds one per event loop, closed when that loop ends.
    ``repr()`` and errors show the endpoint with any password
    redacted and never the key. Every failure is a ``ModelError`` naming the model and
    the endpoint, never an answer that looks complete: 429, 529 and an overloaded stream
    are ``ModelThrottledError`` (with the server's ``retry-after``), a prompt that does
    not fit is ``ContextWindowOverflowError``.
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        params: Mapping[str, Any] | None = None,
        cache_tools: bool = False,
        structured_output: Literal["native", "tool"] = "native",
        max_retries: int = 0,
    ) -> None:
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("pass either client or base_url/api_key, not both")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        if structured_output not in ("native", "tool"):
            raise ValueError(
                f"structured_output must be 'native' or 'tool', got {structured_output!r}"
            )
        given = dict(params or {})
        reserved = sorted(_RESERVED_PARAMS.intersection(given))
        if reserved:
            raise ValueError(f"params may not set {reserved}: AnthropicModel sets them per call")
        unknown = sorted(set(given) - _CREATE_PARAMS)
        if unknown:
            raise ValueError(
                f"params has {unknown}, which messages.create does not take; "
                "pass other request fields in params['extra_body']"
            )
        self.model_id = model_id
        """The model name sent with every request."""
        self.max_tokens = max_tokens
        """The ``max_tokens`` of every request."""
        self.supports_structured_output: bool = structured_output == "native"
        """Whether structured runs use the API's JSON-schema mode (else a forced tool)."""
        self._params: Mapping[str, Any] = MappingProxyType(given)
        self._cache_tools = cache_tools
        self._client = client
        # The endpoint to build clients for; None lets the SDK choose (a profile's, or
        # Anthropic's own).
        self._given_url = (
            None if client is not None else base_url or os.environ.get("ANTHROPIC_BASE_URL")
        )
        # The endpoint as given, credentials included (to hide them in messages); the
        # one the SDK chose, once a client is built.
        self._base_url = (
            str(client.base_url) if client is not None else self._given_url or _DEFAULT_BASE_URL
        )
        self._api_key = api_key
        self._max_retries = max_retries
        # Per model, not shared between models as OpenAIModel's are: a deployment has a
        # few models, and a client costs little on the shared SSL context.
        self._clients = LoopClients(self._build_client, "AnthropicModel")

    @property
    def params(self) -> Mapping[str, Any]:
        """Extra arguments passed to every ``messages.create`` call (read-only)."""
        return self._params

    def cache_identity(self) -> Mapping[str, object]:
        """Every setting that shapes a request, for ``ResponseCache`` keys.

        The model id, ``max_tokens``, ``params``, ``cache_tools`` and the structured-output
        mode; not the credentials or endpoint (give caches over different endpoints a
        ``namespace`` each).
        """
        return {
            "model_id": self.model_id,
            "max_tokens": self.max_tokens,
            "params": dict(self._params),
            "cache_tools": self._cache_tools,
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
        output_schema: OutputSchema[Any] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream the model's answer to *messages* as Converse stream events.

        With *output_schema* (a structured run, native mode), the request asks for a
        reply that is that JSON object. Other keyword arguments the host passes are
        ignored. Closing the generator early (``aclose()``) closes the connection.

        Raises:
            ModelThrottledError: 429, 529, or an overloaded or rate-limit error event.
            ContextWindowOverflowError: The prompt does not fit the context window, or
                the answer was stopped by it.
            ModelError: Any other failure of the call or of its stream.
            ValueError: Before any request, for a block Anthropic cannot carry.
        """
        del kwargs  # Part of the Model protocol; nothing here uses them.
        request = self._request(
            messages, tool_specs, system_prompt, system_prompt_content, tool_choice, output_schema
        )
        try:
            client = self._client or self._clients.for_running_loop()
        # A client that cannot be built (no API key, a bad option): this call's failure.
        except Exception as error:
            failure = Failure(f"could not prepare the request: {type(error).__name__}: {error}")
            raise self._model_error(failure) from error
        started = time.monotonic()
        try:
            response = await client.messages.create(**request, stream=True)
        # Not only APIError: the SDK resolves credentials (profiles, token files) per request.
        except anthropic.AnthropicError as error:
            raise self._model_error(describe(error)) from error
        # The SDK encodes the body as it sends it: a value in params that is not JSON data.
        except (TypeError, ValueError) as error:
            failure = Failure(f"could not prepare the request: {type(error).__name__}: {error}")
            raise self._model_error(failure) from error

        translator = StreamTranslator()
        # `async with` closes the HTTP response when the caller stops iterating early.
        async with response:
            await self._refuse_a_plain_body(response)
            while True:
                try:
                    event = await anext(response)
                except StopAsyncIteration:
                    break
                # ValueError: an event's data that is not JSON, from the SSE decoder;
                # TransportError: the connection broke while the body was read.
                except (anthropic.APIError, httpx2.TransportError, ValueError) as error:
                    raise self._model_error(describe(error)) from error
                try:
                    events = translator.feed(event)
                except StreamFormatError as error:
                    raise self._model_error(describe(error)) from error
                for converted in events:
                    yield converted
            try:
                events = translator.finish(round((time.monotonic() - started) * 1000))
            except (StreamFormatError, ContextWindowFilledError) as error:
                raise self._model_error(describe(error)) from error
        for converted in events:
            yield converted

    def _request(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None,
        system_prompt: str | None,
        system_prompt_content: list[SystemContentBlock] | None,
        tool_choice: ToolChoice | None,
        output_schema: OutputSchema[Any] | None,
    ) -> dict[str, Any]:
        """The arguments of ``messages.create`` for one call (``ValueError`` for a bad block)."""
        request: dict[str, Any] = {
            **self._params,
            "model": self.model_id,
            "max_tokens": self.max_tokens,
            "messages": convert_messages(messages),
        }
        system = convert_system(system_prompt, system_prompt_content)
        if system is not None:
            request["system"] = system
        if tool_specs:
            tools = convert_tools(tool_specs)
            if self._cache_tools and tools:
                tools[-1]["cache_control"] = {"type": "ephemeral"}
            request["tools"] = tools
            if tool_choice is not None:
                choice = convert_tool_choice(tool_choice)
                if choice["type"] != "auto" and self._thinks():
                    # With extended thinking on, the API refuses a choice that forces a
                    # tool ("any" or a named one) and accepts only "auto". Asking is left
                    # to the prompt: the host's structured run tells the model which
                    # tool to call, and asks again (within output_retries) if it did not.
                    choice = {"type": "auto"}
                request["tool_choice"] = choice
        if output_schema is not None and self.supports_structured_output:
            config = dict(request.get("output_config") or {})
            config["format"] = output_format(output_schema.json_schema)
            request["output_config"] = config
        return request

    def _thinks(self) -> bool:
        """Whether requests turn on extended thinking (``params["thinking"]``, not disabled)."""
        thinking = self._params.get("thinking")
        if not isinstance(thinking, Mapping):
            return False
        kind = cast("Mapping[str, object]", thinking).get("type")
        return kind != "disabled"

    async def _refuse_a_plain_body(
        self, response: anthropic.AsyncStream[anthropic.types.RawMessageStreamEvent]
    ) -> None:
        """Raise if the server answered the streaming request with anything but SSE.

        The SSE decoder would find no events in a JSON message or an HTML error page
        from a proxy, and the answer would look empty rather than unread; the body says
        what happened.
        """
        content_type = response.response.headers.get("content-type", "")
        if content_type.partition(";")[0].strip().lower() == "text/event-stream":
            return
        try:
            body = quote(await response.response.aread())
        except Exception as error:  # The body is only quoted; failing to read it is no news.
            body = f"(unreadable: {type(error).__name__})"
        raise self._model_error(
            Failure(
                f"the server sent a non-streaming body ({content_type or 'no content type'}) "
                f"in answer to a streaming request: {body}"
            )
        )

    def _build_client(self) -> anthropic.AsyncAnthropic:
        """A client for this model on the running loop (see ``_loop_clients``).

        Credentials in the base URL become the HTTP client's basic auth, so that no
        request URL (which the HTTP library logs whole) carries them.
        """
        bare_url, credentials = (
            (None, None) if self._given_url is None else split_credentials(self._given_url)
        )
        auth = None if credentials is None else (credentials.username, credentials.password)
        http_client = anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context(), auth=auth)
        client = anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=bare_url,
            max_retries=self._max_retries,
            http_client=http_client,
        )
        if self._given_url is None:
            self._base_url = str(client.base_url)
        return client

    async def aclose(self) -> None:
        """Nothing to release: a built client closes when its loop ends, yours is yours."""

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
        return f"AnthropicModel(model_id={self.model_id!r}, base_url={self._shown_url()!r})"

    def _shown_url(self) -> str:
        return redact_url(self._base_url)

    def _model_error(self, failure: Failure) -> ModelError:
        base_url = self._shown_url()
        message = f"model {self.model_id!r} at {base_url}: {failure.what}"
        # The URL above is redacted; this catches a library's text that quotes it whole.
        for secret in hidden_texts(self._base_url):
            message = message.replace(secret, "***")
        if failure.throttled:
            return ModelThrottledError(
                message,
                retry_after=failure.retry_after,
                model_id=self.model_id,
                base_url=base_url,
                status_code=failure.status_code,
            )
        kind = ContextWindowOverflowError if failure.context_overflow else ModelError
        return kind(
            message, model_id=self.model_id, base_url=base_url, status_code=failure.status_code
        )
