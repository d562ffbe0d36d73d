"""Response caching: an InvokeModel Wrap handler that answers a repeated request from a cache.

The rules it keeps:

- **The key is the request, as this handler sees it.** A sha256 over canonical JSON
  (sorted keys, no spaces) of what decides the model's answer: the model's settings, the
  messages, the system prompt, the tool specs, the tool choice, and the JSON schema of the
  run's structured output. The model's settings are what its ``cache_identity()`` returns
  (the adapters return everything that shapes a request but credentials and endpoint);
  for a model without one, its type, ``model_id``, ``params`` and
  ``supports_structured_output``. A model with neither a ``cache_identity()`` nor a
  ``model_id`` is not cached unless the cache has a ``namespace`` (which then stands for
  the model). Not the agent, the invocation state or the endpoint: two agents asking the
  same thing share an answer, and models that differ only by endpoint need a
  ``namespace`` each. A request that is not JSON data (an object in a message) is not
  cached.
- **A hit replays the stored events** (the stream chunks, then the ``ModelStopReason``)
  without calling the model; its usage is zero tokens and its latency 0 ms, in the stop
  event and in the ``metadata`` chunk alike, so ``result.metrics.usage`` counts what was
  spent, as Strands and LangChain count cache hits. Replayed tool calls get fresh
  ``toolUseId`` values (the same in the chunks and the stop event's message): the key holds
  only the history this handler was given, which a conversation manager may have cut, so
  the stored ids may already be in the agent's full history.
- **A miss streams live**, and its events are stored only when the call completed with a
  stop reason worth keeping (by default ``end_turn``, ``tool_use`` and
  ``stop_sequence``; not a cut-short ``max_tokens`` or a ``content_filtered``). A call
  that failed, was cancelled or whose reader stopped early is not stored.

The backend is anything with async ``get`` and ``set`` (``CacheBackend``); ``MemoryCache``,
an LRU with an optional time to live, is the default. A backend that fails (a Redis that is
down) does not fail the model call: a failed ``get`` is a miss and a failed ``set`` is
skipped, each logged as a warning naming the exception type only.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import inspect
import json
import logging
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Protocol, cast, final, runtime_checkable

from stageware import (
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    Model,
    ModelStopReason,
    ModelStreamChunkEvent,
    StopReason,
    StreamEvent,
    Usage,
)

__all__ = ["CacheBackend", "CachedResponse", "MemoryCache", "ResponseCache"]

_log: Final = logging.getLogger("stageware.middleware")

_KEY_VERSION: Final = "stageware.ResponseCache/1"


@final
@dataclass(frozen=True, slots=True)
class CachedResponse:
    """One model call as a cache keeps it: its stream chunks and its result.

    Plain data (dicts, lists, strings, numbers, and bytes where the model sent them), so a
    backend can pickle it.

    Attributes:
        chunks: The stream events the model sent, in order.
        result: The call's ``ModelStopReason``.
    """

    chunks: tuple[StreamEvent, ...]
    result: ModelStopReason


@runtime_checkable
class CacheBackend(Protocol):
    """Where ``ResponseCache`` keeps responses: ``MemoryCache``, or your own (Redis, ...).

    Keys are sha256 hex digests. A backend may forget an entry at any time; ``get``
    returns ``None`` for one it does not hold. The values it returns are not changed by the
    cache, and the ones it is given are its own.
    """

    async def get(self, key: str) -> CachedResponse | None:
        """The response stored under *key*, or ``None``."""
        ...

    async def set(self, key: str, value: CachedResponse) -> None:
        """Store *value* under *key*, replacing whatever was there."""
        ...


@final
class MemoryCache:
    """An in-memory LRU cache: at most *max_entries* responses, each for *ttl* at most.

    Args:
        max_entries: How many responses it keeps; the least recently used goes first.
        ttl: How long a response is served after it was stored (seconds or a
            ``timedelta``); ``None`` keeps it until it is evicted.
        timer: The clock *ttl* is measured on, in seconds (``time.monotonic``).

    Raises:
        ValueError: *max_entries* is below 1, or *ttl* is not a positive duration.
    """

    __slots__ = ("_entries", "_lock", "_max_entries", "_timer", "_ttl")

    def __init__(
        self,
        max_entries: int = 1024,
        *,
        ttl: float | timedelta | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"MemoryCache: max_entries must be at least 1, got {max_entries}")
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"MemoryCache: ttl must be a positive duration or None, got {ttl!r}")
        self._max_entries = max_entries
        self._ttl = seconds
        self._timer = timer
        self._entries: OrderedDict[str, tuple[float, CachedResponse]] = OrderedDict()
        # Agents on several threads (sync calls from a pool) may share one cache.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> CachedResponse | None:
        """The response stored under *key*, unless it expired or was evicted."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            stored_at, value = entry
            if self._ttl is not None and self._timer() - stored_at >= self._ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    async def set(self, key: str, value: CachedResponse) -> None:
        """Store *value*, evicting the least recently used response when full."""
        with self._lock:
            self._entries[key] = (self._timer(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every response."""
        with self._lock:
            self._entries.clear()

    def __repr__(self) -> str:
        return f"MemoryCache({len(self._entries)}/{self._max_entries} entries, ttl={self._ttl})"


@final
class ResponseCache:
    """Answer a request the model answered before from a cache, without calling it.

    Register it on the InvokeModel stage (Wrap):

    ```python
    agent.add_middleware(InvokeModelStage, ResponseCache())
    ```

    Handlers registered before it see every call; those after it (and the model) only the
    misses.

    Args:
        backend: Where responses are kept: a ``MemoryCache()`` of its own by default.
        stop_reasons: The stop reasons of a response worth storing.
        namespace: Mixed into every key: caches with different namespaces never share
            an answer (models that differ only by endpoint, or a new prompt version).
            Needed to cache a model with neither ``cache_identity()`` nor ``model_id``.

    Raises:
        TypeError: *backend* has no async ``get`` and ``set``, or *stop_reasons* is a
            single string.
    """

    __slots__ = ("_backend", "_hits", "_misses", "_namespace", "_stop_reasons")

    def __init__(
        self,
        backend: CacheBackend | None = None,
        *,
        stop_reasons: Iterable[StopReason] = ("end_turn", "tool_use", "stop_sequence"),
        namespace: str = "",
    ) -> None:
        if backend is not None and not (
            isinstance(cast("object", backend), CacheBackend)
            and inspect.iscoroutinefunction(backend.get)
            and inspect.iscoroutinefunction(backend.set)
        ):
            raise TypeError(
                f"ResponseCache: backend {type(backend).__name__} is not a CacheBackend (an "
                "object with async get(key) and set(key, value) methods, defined with async def)"
            )
        if isinstance(cast("object", stop_reasons), str):
            raise TypeError(
                f"ResponseCache: stop_reasons is a collection of stop reasons, got the string "
                f"{stop_reasons!r}; write ({stop_reasons!r},)"
            )
        self._backend: CacheBackend = MemoryCache() if backend is None else backend
        self._stop_reasons = frozenset(stop_reasons)
        self._namespace = namespace
        self._hits = 0
        self._misses = 0

    @property
    def backend(self) -> CacheBackend:
        """Where the responses are kept."""
        return self._backend

    @property
    def hits(self) -> int:
        """Calls answered from the cache so far."""
        return self._hits

    @property
    def misses(self) -> int:
        """Calls passed on to the model so far (requests that cannot be keyed included)."""
        return self._misses

    def key(self, context: InvokeModelContext) -> str | None:
        """The cache key of the call *context* describes, or ``None`` if it cannot have one."""
        model = _model_identity(context.model)
        if model is None and not self._namespace:
            return None
        request = {
            "version": _KEY_VERSION,
            "namespace": self._namespace,
            "model": model,
            "messages": context.messages,
            "system_prompt": context.system_prompt,
            "tool_specs": context.tool_specs,
            "tool_choice": context.tool_choice,
            "output": _output_identity(context.structured_output_model),
        }
        try:
            text = _canonical_json(request)
        except (TypeError, ValueError):
            return None
        return hashlib.sha256(text.encode()).hexdigest()

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """Replay a stored response, or call the model and store its answer (a Wrap handler)."""
        key = self.key(context)
        cached = None if key is None else await self._get(key)
        if cached is not None:
            self._hits += 1
            _log.debug("response cache hit %s", key)
            fresh_ids: dict[str, str] = {}
            for chunk in cached.chunks:
                chunk = _with_fresh_ids(_without_cost(copy.deepcopy(chunk)), fresh_ids)
                yield ModelStreamChunkEvent(chunk=chunk)
            result = cached.result
            message = copy.deepcopy(result.message)
            for block in message["content"]:
                tool_use = block.get("toolUse")
                if tool_use is not None:
                    tool_use["toolUseId"] = _fresh_id(tool_use["toolUseId"], fresh_ids)
            yield ModelStopReason(
                stop_reason=result.stop_reason,
                message=message,
                usage=_no_usage(),
                metrics={"latencyMs": 0},
            )
            return
        self._misses += 1
        chunks: list[StreamEvent] = []
        final: ModelStopReason | None = None
        async with aclosing(next_fn(context)) as events:
            async for event in events:
                if isinstance(event, ModelStreamChunkEvent):
                    chunks.append(copy.deepcopy(event.chunk))
                else:
                    final = event
                yield event
        if key is None or final is None or final.stop_reason not in self._stop_reasons:
            return
        stored = CachedResponse(
            chunks=tuple(chunks),
            result=ModelStopReason(
                stop_reason=final.stop_reason,
                message=copy.deepcopy(final.message),
                usage=copy.deepcopy(final.usage),
                metrics=copy.deepcopy(final.metrics),
            ),
        )
        try:
            await self._backend.set(key, stored)
        except Exception as error:  # a cache that is down must not fail an answered call
            _log.warning(
                "response cache: storing failed (%s); the answer is not cached",
                type(error).__name__,
            )

    async def _get(self, key: str) -> CachedResponse | None:
        try:
            return await self._backend.get(key)
        except Exception as error:  # a cache that is down is a miss, not a failed call
            _log.warning(
                "response cache: lookup failed (%s); calling the model", type(error).__name__
            )
            return None

    def __repr__(self) -> str:
        return f"ResponseCache({self._backend!r}, hits={self._hits}, misses={self._misses})"


def _without_cost(chunk: StreamEvent) -> StreamEvent:
    """*chunk*, with a ``metadata`` chunk's usage and latency zeroed: a replay costs nothing."""
    metadata = chunk.get("metadata")
    if metadata is not None:
        metadata["usage"] = _no_usage()
        metadata["metrics"] = {"latencyMs": 0}
    return chunk


def _with_fresh_ids(chunk: StreamEvent, fresh_ids: dict[str, str]) -> StreamEvent:
    """*chunk*, with a tool call's id replaced by its fresh one (made on first sight)."""
    start = chunk.get("contentBlockStart")
    tool_use = None if start is None else start["start"].get("toolUse")
    if tool_use is not None:
        tool_use["toolUseId"] = _fresh_id(tool_use["toolUseId"], fresh_ids)
    return chunk


def _fresh_id(stored: str, fresh_ids: dict[str, str]) -> str:
    fresh = fresh_ids.get(stored)
    if fresh is None:
        fresh = fresh_ids[stored] = f"tooluse_cached_{secrets.token_hex(8)}"
    return fresh


def _no_usage() -> Usage:
    return {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}


def _model_identity(model: Model) -> dict[str, object] | None:
    """The settings of *model* that shape its requests, or ``None`` if none can be seen.

    Its ``cache_identity()`` where it has one; else its ``model_id``, ``params`` and
    ``supports_structured_output``. Its type either way.
    """
    kind = type(model)
    identity: dict[str, object] = {"type": f"{kind.__module__}.{kind.__qualname__}"}
    cache_identity: object = getattr(model, "cache_identity", None)
    if callable(cache_identity):
        settings: object = cache_identity()
        if not isinstance(settings, Mapping):
            raise TypeError(
                f"ResponseCache: {kind.__qualname__}.cache_identity() returned "
                f"{type(settings).__name__}, not a mapping"
            )
        identity["settings"] = settings
        return identity
    model_id: object = getattr(model, "model_id", None)
    if not isinstance(model_id, str):
        return None
    identity["model_id"] = model_id
    params: object = getattr(model, "params", None)
    if isinstance(params, Mapping):
        identity["params"] = params
    native: object = getattr(model, "supports_structured_output", None)
    if isinstance(native, bool):
        identity["native_output"] = native
    return identity


def _output_identity(output_type: type[Any] | None) -> object:
    if output_type is None:
        return None
    return {
        "type": f"{output_type.__module__}.{output_type.__qualname__}",
        "schema": _json_schema(output_type),
    }


# A structured run's schema, built once per output type (they live as long as their module).
_SCHEMAS: dict[type[Any], dict[str, Any]] = {}


def _json_schema(output_type: type[Any]) -> dict[str, Any]:
    schema = _SCHEMAS.get(output_type)
    if schema is None:
        # pydantic is loaded already in a structured run: the host validates with it.
        from pydantic import TypeAdapter

        schema = _SCHEMAS[output_type] = TypeAdapter(output_type).json_schema()
    return schema


def _canonical_json(data: object) -> str:
    return json.dumps(
        data,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_encode_bytes,
    )


def _encode_bytes(value: object) -> object:
    # Images and documents carry bytes; anything else is not JSON data, and not keyed.
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"{type(value).__name__} is not JSON data")
