"""Ready-made middleware for the reference host's stages.

Register them with ``agent.add_middleware`` like your own: they are written with the same
typed surface (``ModelFallback`` and ``ResponseCache`` are InvokeModel Wrap handlers,
``ToolRetry`` an ExecuteTool Wrap handler). Nothing here needs an extra.
"""

from __future__ import annotations

from stageware._middleware import (
    CacheBackend,
    CachedResponse,
    MemoryCache,
    ModelFallback,
    ResponseCache,
    ToolRetry,
    ToolRetryAttempt,
)

__all__ = [
    "CacheBackend",
    "CachedResponse",
    "MemoryCache",
    "ModelFallback",
    "ResponseCache",
    "ToolRetry",
    "ToolRetryAttempt",
]
