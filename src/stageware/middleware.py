"""Ready-made middleware for the reference host's stages.

Register them like your own: they are written with the same typed surface users have.
Nothing here needs an extra.

- ``SlidingWindow``, ``Summarizing``: conversation managers (InvokeModel Wrap) that send
  each model call the newest turns that fit a budget, or a summary of the oldest; also
  ``Agent(conversation_manager=...)``.
- ``ModelFallback``: moves a failed model call on to the next model (InvokeModel Wrap).
- ``require_approval``: a declared policy middleware that suspends the listed tools' calls
  until an approver answers (for a ``PolicyEngine``).
- ``RedactPII``: personal data out of model input, model output and tool results.
- ``CallLimits``: tool-call limits per run and per tool.
"""

from __future__ import annotations

from stageware._middleware import (
    ApprovalCondition,
    CallLimits,
    ModelFallback,
    OnLimit,
    PIIName,
    PIIPattern,
    PIIReplacement,
    RedactPII,
    SlidingWindow,
    Summarizing,
    require_approval,
)

__all__ = [
    "ApprovalCondition",
    "CallLimits",
    "ModelFallback",
    "OnLimit",
    "PIIName",
    "PIIPattern",
    "PIIReplacement",
    "RedactPII",
    "SlidingWindow",
    "Summarizing",
    "require_approval",
]
