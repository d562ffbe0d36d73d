"""Ready-made middleware for the reference host's stages.

Register them with ``agent.add_middleware`` like your own: they are written with the same
typed surface. Nothing here needs an extra.

- ``ModelFallback``: moves a failed model call on to the next model.
- ``SlidingWindow``: sends each model call the newest turns that fit a budget.
- ``Summarizing``: condenses the oldest turns into a summary when a call is over budget.

All three are InvokeModel Wrap handlers; the two conversation managers can also be passed
as ``Agent(conversation_manager=...)``.
"""

from __future__ import annotations

from stageware._middleware import ModelFallback, SlidingWindow, Summarizing

__all__ = ["ModelFallback", "SlidingWindow", "Summarizing"]
