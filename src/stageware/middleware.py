"""Ready-made middleware for the reference host's stages.

Register them like your own: they are written with the same typed surface users have,
and mypy and pyright refuse each on a stage it does not belong to. Nothing here needs an
extra.

- ``SlidingWindow``, ``Summarizing``: conversation managers (InvokeModel Wrap) that send
  each model call the newest turns that fit a budget, or a summary of the oldest; also
  ``Agent(conversation_manager=...)``.
- ``require_approval``: a declared policy middleware that suspends the listed tools' calls
  until an approver answers (for a ``PolicyEngine``).
- ``RedactPII``: personal data out of model input, model output and tool results.
- ``CallLimits``: tool-call limits per run and per tool.
- ``ToolRetry`` (ExecuteTool Wrap): runs a tool that failed with a transient error again,
  with backoff (on tenacity).
- ``ResponseCache`` (InvokeModel Wrap): answers a request seen before from a cache
  (``MemoryCache``, or a ``CacheBackend`` of your own).
- ``ModelFallback`` (InvokeModel Wrap): moves a failed model call on to the next model.
"""

from __future__ import annotations

from stageware._middleware import (
    ApprovalCondition,
    CacheBackend,
    CachedResponse,
    CallLimits,
    MemoryCache,
    ModelFallback,
    OnLimit,
    PIIName,
    PIIPattern,
    PIIReplacement,
    RedactPII,
    ResponseCache,
    SlidingWindow,
    Summarizing,
    ToolRetry,
    ToolRetryAttempt,
    require_approval,
)

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
