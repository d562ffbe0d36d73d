"""The policy layer: declared middleware, outcomes, hook points, bands and the engine.

"Hook" here is the policy layer's word: a hook point (``tool.before``) is a stage, a
phase and a direction where declared policy middleware runs. It is not a lifecycle hook
(``agent.add_hook``). The hook events live here, apart from ``stageware``, because some
share a name with a stage event: ``stageware.policy.ToolResultEvent`` is the payload of
the ``tool.after`` hook point, while ``stageware.ToolResultEvent`` is the ExecuteTool
stage's result event.
"""

from stageware._generated.policy_points import (
    BANDS,
    HOOK_POINTS,
    ApprovalResolvedEvent,
    Band,
    ContextEvent,
    Direction,
    HookEvent,
    HookPoint,
    HookPointSpec,
    InputEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    OutputEvent,
    RouteEvent,
    RunEndEvent,
    RunErrorEvent,
    RunStartEvent,
    StreamChunkEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from stageware._host._halt import Decision, Halt
from stageware._policy._approval import Approval
from stageware._policy._declare import FailMode, MiddlewareDef, middleware
from stageware._policy._engine import PolicyEngine
from stageware._policy._entries import PolicyEntry
from stageware._policy._env import PolicyEnv
from stageware._policy._errors import SpecError
from stageware._policy._identity import ApprovalRefused, Approver, Authenticator, SignedCredentials
from stageware._policy._outcomes import Block, Continue, Escalate, Guide, Outcome, Retry, Suspend
from stageware._policy._principal import PRINCIPAL_KEY, Principal
from stageware._policy._rules import ALLOWED, DEFAULT_RETRY_BUDGET, MODIFIABLE
from stageware._policy._spec import PolicySpec, load_policy, read_policy

# Listed, not built: type checkers read a library's exports from this literal list.
__all__ = [
    "ALLOWED",
    "BANDS",
    "DEFAULT_RETRY_BUDGET",
    "HOOK_POINTS",
    "MODIFIABLE",
    "PRINCIPAL_KEY",
    "Approval",
    "ApprovalRefused",
    "ApprovalResolvedEvent",
    "Approver",
    "Authenticator",
    "Band",
    "Block",
    "ContextEvent",
    "Continue",
    "Decision",
    "Direction",
    "Escalate",
    "FailMode",
    "Guide",
    "Halt",
    "HookEvent",
    "HookPoint",
    "HookPointSpec",
    "InputEvent",
    "MiddlewareDef",
    "ModelRequestEvent",
    "ModelResponseEvent",
    "Outcome",
    "OutputEvent",
    "PolicyEngine",
    "PolicyEntry",
    "PolicyEnv",
    "PolicySpec",
    "Principal",
    "Retry",
    "RouteEvent",
    "RunEndEvent",
    "RunErrorEvent",
    "RunStartEvent",
    "SignedCredentials",
    "SpecError",
    "StreamChunkEvent",
    "Suspend",
    "ToolCallEvent",
    "ToolResultEvent",
    "load_policy",
    "middleware",
    "read_policy",
]
