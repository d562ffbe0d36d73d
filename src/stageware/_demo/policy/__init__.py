"""``stageware demo policy``: a refund desk agent under a policy spec, with its trace.

- ``_middleware``: the declared policy middleware (``DEMO_MIDDLEWARE``, which the
  conformance suite runs too).
- ``policy.yaml`` and ``org.yaml``: the policy spec and the org baseline profile that
  place them in bands and give their settings (package data).
- ``_desk``: the refund tool and the scripted model.
- ``_story``: ``run_policy_demo``, which plays the scenes of ``_scenes`` in order; each
  scene tells its run and checks its claims through ``_cast``, and ``_decisions`` turns
  the decision records into the trace's rows.
"""

from ._middleware import DEMO_MIDDLEWARE
from ._story import run_policy_demo

__all__ = ["DEMO_MIDDLEWARE", "run_policy_demo"]
