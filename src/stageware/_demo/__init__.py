"""``stageware demo``: an agent run end to end through typed middleware, with a trace.

The story and its checks are in ``_story``; the middleware it registers in
``_middleware``, the tools and the scripted model in ``_support_desk``.
"""

from ._story import DemoCheckError, run_demo

__all__ = ["DemoCheckError", "run_demo"]
