"""``stageware demo``: agent runs end to end through middleware, each with a trace.

Two stories, each checking its own claims and raising ``DemoCheckError`` when one fails:

- ``_story`` (``stageware demo``): typed stage middleware. The middleware it registers
  are in ``_middleware``, the tools and the scripted model in ``_support_desk``, the
  trace in ``_trace``.
- ``policy`` (``stageware demo policy``): the policy layer, loaded from a policy spec
  and an org baseline profile.
"""

from ._errors import DemoCheckError
from ._story import run_demo

__all__ = ["DemoCheckError", "run_demo"]
