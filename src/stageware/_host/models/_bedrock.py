"""A ``Model`` backed by Amazon Bedrock's Converse API (``ConverseStream``), through boto3.

The history is Converse-shaped already, so this is the thinnest adapter: ``_bedrock_request``
builds the request, ``_bedrock_pump`` runs the blocking boto3 call and its event stream in
a thread, ``_bedrock_events`` keeps what the payload types describe, ``_bedrock_errors``
says what went wrong. This module owns the client and names the model in every error.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Final, Literal, Self, final

import anyio.to_thread
import boto3
import botocore.client
import botocore.config

from stageware._generated.payloads import (
    Messages,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
)

from ._bedrock_errors import Failure, StreamFailedError, describe
from ._bedrock_events import EventTranslator
from ._bedrock_pump import EventPump
from ._bedrock_request import RESERVED_PARAMS, build_request
from ._credentials import redact_url
from ._errors import ContextWindowOverflowError, ModelError, ModelThrottledError
from ._output_schema import OutputSchema

__all__ = ["BedrockModel"]

_SERVICE: Final = "bedrock-runtime"
_GUARDRAIL_KEYS: Final = ("guardrailIdentifier", "guardrailVersion")


@final
class BedrockModel:
    """A ``Model`` that streams from Amazon Bedrock's ``ConverseStream``.

    Credentials follow boto3's own chain (environment, profile, SSO, instance role); pass
    a ``boto_session`` to choose a profile or credentials, ``region_name`` to choose the
    region (else the session's), ``endpoint_url`` for a VPC endpoint or a test server,
    ``boto_client_config`` for botocore's ``Config`` (timeouts, retries, pool size), or a
    ready ``client`` (a ``bedrock-runtime`` client) instead of all of these. Without a
    client, one is built on the first call, off the event loop, and shared by the
    model's calls (boto3 clients are thread-safe). No credential appears in errors,
    ``repr()`` or logs: they name the model, the region and its endpoint.

    *params* are more ConverseStream request fields: ``inferenceConfig`` (``maxTokens``,
    ``temperature``, ...), ``additionalModelRequestFields`` (extended thinking, say),
    ``additionalModelResponseFieldPaths``, ``performanceConfig``, ``requestMetadata``, ...
    *guardrail* is the ``guardrailConfig`` (``guardrailIdentifier``, ``guardrailVersion``,
    and ``trace: "enabled"`` to get the guardrail's assessment in the ``metadata``
    event's ``trace``). ``cache_tools=True`` puts a cache point after the tool specs;
    cache points in the messages and the system prompt pass as they are, and the usage
    counts cache reads and writes.

    ``structured_output="native"`` asks Bedrock to constrain a structured run's reply to
    the JSON schema itself (``outputConfig.textFormat``), for models that support it;
    the default, ``"tool"``, leaves the host to ask through a forced tool call, which any
    model with tool use supports.

    Every failure is a ``ModelError`` naming the model and the endpoint: an error
    response, an exception sent mid-stream, a refused connection, a malformed or
    cut-short event stream. ``ThrottlingException``, ``ServiceUnavailableException``,
    ``ModelNotReadyException`` and HTTP 429 and 503, before or during the stream, are a
    ``ModelThrottledError`` that the agent retries with backoff; botocore retries an
    error response first (up to 4 times in its default ``legacy`` retry mode), so pass
    ``boto_client_config=Config(retries={"total_max_attempts": 1})`` to leave every retry
    to the agent. A ``ValidationException`` saying the input is too long is a
    ``ContextWindowOverflowError``.
    """

    def __init__(
        self,
        model_id: str,
        *,
        region_name: str | None = None,
        boto_session: boto3.Session | None = None,
        client: botocore.client.BaseClient | None = None,
        endpoint_url: str | None = None,
        boto_client_config: botocore.config.Config | None = None,
        params: Mapping[str, Any] | None = None,
        guardrail: Mapping[str, str] | None = None,
        cache_tools: bool = False,
        structured_output: Literal["native", "tool"] = "tool",
    ) -> None:
        if client is not None and (
            region_name is not None
            or boto_session is not None
            or endpoint_url is not None
            or boto_client_config is not None
        ):
            raise ValueError(
                "pass either client or region_name/boto_session/endpoint_url/"
                "boto_client_config, not both: a client is already configured"
            )
        reserved = sorted(RESERVED_PARAMS.intersection(params or {}))
        if reserved:
            raise ValueError(
                f"params may not set {reserved}: BedrockModel sets them per call "
                "(the guardrail with guardrail=)"
            )
        if guardrail is not None:
            missing = [key for key in _GUARDRAIL_KEYS if key not in guardrail]
            if missing:
                raise ValueError(f"guardrail lacks {missing}")
        if structured_output not in ("native", "tool"):
            raise ValueError(
                f"structured_output must be 'native' or 'tool', not {structured_output!r}"
            )
        self.model_id = model_id
        """The Bedrock model id (or inference profile, or ARN) sent with every request."""
        self._params: Mapping[str, Any] = MappingProxyType(dict(params or {}))
        self._guardrail: Mapping[str, str] | None = (
            None if guardrail is None else MappingProxyType(dict(guardrail))
        )
        self._cache_tools = cache_tools
        self._structured_output: Literal["native", "tool"] = structured_output
        self._region_name = region_name
        self._boto_session = boto_session
        self._endpoint_url = endpoint_url
        self._boto_client_config = boto_client_config
        self._client: botocore.client.BaseClient | None = client
        self._owns_client = client is None
        self._client_lock = threading.Lock()

    @property
    def supports_structured_output(self) -> bool:
        """Whether a structured run uses Bedrock's native JSON-schema mode."""
        return self._structured_output == "native"

    @property
    def params(self) -> Mapping[str, Any]:
        """More ConverseStream request fields, sent with every request (read-only)."""
        return self._params

    def cache_identity(self) -> Mapping[str, object]:
        """Every setting that shapes a request, for ``ResponseCache`` keys.

        The model id, ``params``, the guardrail, ``cache_tools`` and the structured-output
        mode; not the credentials, region or endpoint (give caches over different
        endpoints a ``namespace`` each).
        """
        return {
            "model_id": self.model_id,
            "params": dict(self._params),
            "guardrail": None if self._guardrail is None else dict(self._guardrail),
            "cache_tools": self._cache_tools,
            "structured_output": self._structured_output,
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

        Keyword arguments the host passes for other models are ignored. Closing the
        generator early (``aclose()``) or cancelling the task closes the HTTP response and
        ends the thread reading it.

        Raises:
            ModelThrottledError: Bedrock throttled the call, before or during the stream.
            ContextWindowOverflowError: The conversation does not fit the model's context
                window.
            ModelError: The call failed, or the response was not a complete stream.
            ValueError: Before any request, when an image or redacted reasoning in the
                conversation is not base64 text.
        """
        del kwargs  # Part of the Model protocol; nothing here uses them.
        request = build_request(
            self.model_id,
            messages,
            system_prompt=system_prompt,
            system_prompt_content=system_prompt_content,
            tool_specs=tool_specs,
            tool_choice=tool_choice,
            cache_tools=self._cache_tools,
            params=self._params,
            guardrail=self._guardrail,
            output_schema=output_schema if self.supports_structured_output else None,
        )
        pump = EventPump(lambda: self._call(request))
        translator = EventTranslator()
        pump.start()
        try:
            while (batch := await self._next_batch(pump)) is not None:
                for raw in batch:
                    try:
                        event = translator.feed(raw)
                    except StreamFailedError as error:
                        raise self._model_error(error.failure) from None
                    if event is not None:
                        yield event
            try:
                translator.finish()
            except StreamFailedError as error:
                raise self._model_error(error.failure) from None
        finally:
            pump.close()

    async def _next_batch(self, pump: EventPump) -> list[Mapping[str, Any]] | None:
        try:
            return await pump.next_batch()
        except Exception as error:
            raise self._model_error(describe(error)) from error

    def _call(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """Make the ConverseStream request (in the pump's thread)."""
        converse_stream = self._get_client().converse_stream
        response: Mapping[str, Any] = converse_stream(**request)
        return response

    def _get_client(self) -> Any:
        """The client, built on first use; ``Any``: boto3 clients' methods are dynamic."""
        with self._client_lock:
            if self._client is None:
                session = self._boto_session or boto3.Session()
                # boto3-stubs types `Session.client` per service, through optional stub
                # packages (mypy-boto3-*); without them a checker cannot name its result.
                # Hence `getattr`: the attribute, read as `Any`, typed here once.
                create: Callable[..., botocore.client.BaseClient] = getattr(  # noqa: B009
                    session, "client"
                )
                self._client = create(
                    _SERVICE,
                    region_name=self._region_name,
                    endpoint_url=self._endpoint_url,
                    config=self._boto_client_config,
                )
            return self._client

    async def aclose(self) -> None:
        """Close the connections of the client the model built; a client passed in is yours."""
        with self._client_lock:
            client, self._client = (self._client, None) if self._owns_client else (None, None)
        if client is not None:
            await anyio.to_thread.run_sync(client.close)

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
        return f"BedrockModel(model_id={self.model_id!r}, endpoint={self._shown_endpoint()!r})"

    def _shown_endpoint(self) -> str:
        """The endpoint calls go to, as far as it is known without building a client."""
        client = self._client
        if client is not None:
            return redact_url(str(client.meta.endpoint_url))
        if self._endpoint_url is not None:
            return redact_url(self._endpoint_url)
        region = self._region_name or (
            self._boto_session.region_name if self._boto_session is not None else None
        )
        return f"{_SERVICE} in {region}" if region else f"{_SERVICE} in the default region"

    def _model_error(self, failure: Failure) -> ModelError:
        endpoint = self._shown_endpoint()
        message = f"model {self.model_id!r} at {endpoint}: {failure.what}"
        if failure.context_overflow:
            return ContextWindowOverflowError(
                message, model_id=self.model_id, base_url=endpoint, status_code=failure.status_code
            )
        if failure.throttled:
            return ModelThrottledError(
                message,
                retry_after=failure.retry_after,
                model_id=self.model_id,
                base_url=endpoint,
                status_code=failure.status_code,
            )
        return ModelError(
            message, model_id=self.model_id, base_url=endpoint, status_code=failure.status_code
        )
