"""The policy layer: declared middleware, outcomes, hook points, bands and the engine.

"Hook" here is the policy layer's word: a hook point (``tool.before``) is a stage, a
phase and a direction where declared policy middleware runs. It is not a lifecycle hook
(``agent.add_hook``). The hook events live here, apart from ``stageware``, because some
share a name with a stage event: ``stageware.policy.ToolResultEvent`` is the payload of
the ``tool.after`` hook point, while ``stageware.ToolResultEvent`` is the ExecuteTool
stage's result event.
"""

from stageware._generated import policy_points as _policy_points
from stageware._generated.policy_points import *  # noqa: F403 - the module's __all__ is the list
from stageware._host._halt import Decision, Halt
from stageware._policy._approval import Approval
from stageware._policy._declare import FailMode, MiddlewareDef, middleware
from stageware._policy._engine import PolicyEngine
from stageware._policy._entries import PolicyEntry
from stageware._policy._env import PolicyEnv
from stageware._policy._errors import SpecError
from stageware._policy._outcomes import Block, Continue, Escalate, Outcome, Retry, Suspend
from stageware._policy._rules import ALLOWED, DEFAULT_RETRY_BUDGET, MODIFIABLE
from stageware._policy._spec import PolicySpec, load_policy, read_policy

__all__: list[str] = [
    "ALLOWED",
    "DEFAULT_RETRY_BUDGET",
    "MODIFIABLE",
    "Approval",
    "Block",
    "Continue",
    "Decision",
    "Escalate",
    "FailMode",
    "Halt",
    "MiddlewareDef",
    "Outcome",
    "PolicyEngine",
    "PolicyEntry",
    "PolicyEnv",
    "PolicySpec",
    "Retry",
    "SpecError",
    "Suspend",
    "load_policy",
    "middleware",
    "read_policy",
]
__all__ += _policy_points.__all__
