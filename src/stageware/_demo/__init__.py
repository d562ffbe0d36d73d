"""``stageware demo``: agent runs end to end through middleware, each with a trace.

Two stories, each checking its own claims and raising ``DemoCheckError`` when one fails:

- ``middleware`` (``_story``, the default): typed stage middleware. The middleware it
  registers are in ``_middleware``, the tools and the scripted model in
  ``_support_desk``, the trace in ``_trace``.
- ``policy`` (the ``policy`` package): the policy layer, loaded from a policy spec and
  an org baseline profile.
"""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TextIO

from ._errors import DemoCheckError
from ._story import run_demo
from .policy import run_policy_demo

__all__ = ["STORIES", "DemoCheckError", "run_demo", "run_policy_demo"]

STORIES: Final[Mapping[str, Callable[[TextIO, Path | None], None]]] = {
    "middleware": run_demo,
    "policy": run_policy_demo,
}
"""The stories ``stageware demo STORY`` runs, by name; each writes its trace to a stream."""
