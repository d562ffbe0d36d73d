"""Ready-made middleware for the reference host's stages.

Register them like your own: they are written with the same typed surface
(``ModelFallback`` is an InvokeModel Wrap handler; ``require_approval`` returns a declared
policy middleware for a ``PolicyEngine``). Nothing here needs an extra.
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
    "require_approval",
]
