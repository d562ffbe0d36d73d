"""Ready-made middleware, written with the typed surface users have.

Each middleware is a module of its own and imports only public stageware modules
(``stageware``, ``stageware.runtime``), as a user's middleware would: nothing here reaches
into the host. ``stageware.middleware`` is the public face.
"""

from ._model_fallback import ModelFallback
from ._response_cache import CacheBackend, CachedResponse, MemoryCache, ResponseCache
from ._tool_retry import ToolRetry, ToolRetryAttempt

__all__ = [
    "CacheBackend",
    "CachedResponse",
    "MemoryCache",
    "ModelFallback",
    "ResponseCache",
    "ToolRetry",
    "ToolRetryAttempt",
]
