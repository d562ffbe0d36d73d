"""Ready-made middleware, written with the typed surface users have.

Each middleware is a module of its own and imports only public stageware modules
(``stageware``, ``stageware.runtime``, ``stageware.policy``), as a user's middleware
would: nothing here reaches into the host. ``stageware.middleware`` is the public face.
A module that needs the policy layer imports it when it is used, so that importing this
package costs no more than the agent's own import.
"""

from ._call_limits import CallLimits, OnLimit
from ._model_fallback import ModelFallback
from ._pii_patterns import PIIName, PIIPattern
from ._redact import PIIReplacement, RedactPII
from ._require_approval import ApprovalCondition, require_approval
from ._response_cache import CacheBackend, CachedResponse, MemoryCache, ResponseCache
from ._sliding_window import SlidingWindow
from ._summarizing import Summarizing
from ._tool_retry import ToolRetry, ToolRetryAttempt

__all__ = [
    "ApprovalCondition",
    "CacheBackend",
    "CachedResponse",
    "CallLimits",
    "MemoryCache",
    "ModelFallback",
    "OnLimit",
    "PIIName",
    "PIIPattern",
    "PIIReplacement",
    "RedactPII",
    "ResponseCache",
    "SlidingWindow",
    "Summarizing",
    "ToolRetry",
    "ToolRetryAttempt",
    "require_approval",
]
