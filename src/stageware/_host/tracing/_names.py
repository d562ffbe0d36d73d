"""The names of the spans' attributes: the OpenTelemetry GenAI conventions, and stageware's own.

The GenAI names follow the semantic conventions for GenAI agent, model and tool spans
(status: development). stageware's own attributes are under ``stageware.``.
"""

from __future__ import annotations

__all__ = [
    "AGENT_ID",
    "AGENT_NAME",
    "CANCELLED",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "FINISH_REASONS",
    "HALT_HOOK",
    "HALT_MIDDLEWARE",
    "HALT_REASON",
    "HANDLER",
    "INPUT_TOKENS",
    "INTERRUPTED",
    "INTERRUPTS",
    "OPERATION",
    "OUTPUT_TOKENS",
    "PHASE",
    "POLICY_APPROVER",
    "POLICY_BAND",
    "POLICY_ERROR",
    "POLICY_HOOK",
    "POLICY_MIDDLEWARE",
    "POLICY_MODIFIED",
    "POLICY_OUTCOME",
    "POLICY_REASON",
    "REQUEST_MODEL",
    "STAGE",
    "STOP_REASON",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "TOOL_STATUS",
    "TOOL_TYPE",
]

OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"

STOP_REASON = "stageware.stop_reason"
"""Why the invocation or its pass stopped: ``end_turn``, ``interrupt``, ``blocked``, ..."""
INTERRUPTS = "stageware.interrupts"
"""The ids of the interrupts the invocation stopped on."""
INTERRUPTED = "stageware.interrupted"
"""Whether a span's work stopped on an interrupt (which is not an error)."""
CANCELLED = "stageware.cancelled"
"""Whether a span's work was cancelled."""
HALT_HOOK = "stageware.halt.hook"
HALT_MIDDLEWARE = "stageware.halt.middleware"
HALT_REASON = "stageware.halt.reason"
TOOL_STATUS = "stageware.tool.status"
"""``success`` or ``error``: the status of the result the model receives."""

STAGE = "stageware.stage"
PHASE = "stageware.phase"
HANDLER = "stageware.handler"

POLICY_HOOK = "stageware.policy.hook"
POLICY_MIDDLEWARE = "stageware.policy.middleware"
POLICY_BAND = "stageware.policy.band"
POLICY_OUTCOME = "stageware.policy.outcome"
POLICY_REASON = "stageware.policy.reason"
POLICY_MODIFIED = "stageware.policy.modified"
POLICY_ERROR = "stageware.policy.error"
POLICY_APPROVER = "stageware.policy.approver"
"""The verified approver whose answer a decision carries out."""
