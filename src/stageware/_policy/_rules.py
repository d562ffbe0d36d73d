"""Which outcome is allowed at which hook point, what a modification may change, and budgets.

One table, read by the engine (to refuse what is not allowed, as a middleware error), by
the conformance suite and by ``stageware policy check``; the policies guide publishes it.

The reasoning behind it:

- **Suspend** needs a step that has not happened yet and can be replayed: the step runs
  once the approver answers. So it is allowed only on the way in (before the run, the
  model call or the tool call), never after a tool ran or a response streamed.
- **Retry** needs a step that can be redone: the model call (``model.response``,
  ``stream.chunk``) and the tool call (``tool.after``).
- **Guide** needs a step the model can be told about and carry on from: a tool call that
  has not run (``tool.before``: its error result carries the feedback) and a model call
  that can be redone (``model.response``, ``stream.chunk``: asked again with the
  feedback). Not ``tool.after``: the tool has run, and an error result would tell the
  model that a call whose effects happened failed, inviting it to make the call again
  (``Continue(modified=...)`` replaces what the model reads, ``Retry`` redoes it). Not
  ``output.final``: the answer is the model's response, guided at ``model.response``, and
  the loop is over. Not on the way in before the model has said anything to correct.
- ``approval.resolved``, ``run.error`` and ``run.end`` report what happened; at the last
  two only a plain ``Continue`` is allowed, since there is nothing left to stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from stageware._generated.policy_points import HookPoint

from ._outcomes import OUTCOME_TYPES, Block, Continue, Escalate, Guide, Outcome, Retry, Suspend

__all__ = [
    "ALLOWED",
    "DEFAULT_RETRY_BUDGET",
    "MODIFIABLE",
    "allowed_names",
    "is_allowed",
]

_ON_THE_WAY_IN: Final = frozenset({Continue, Block, Suspend, Escalate})
_REDOABLE: Final = frozenset({Continue, Block, Escalate, Retry})
_MODEL_REDOABLE: Final = _REDOABLE | {Guide}

ALLOWED: Final[Mapping[HookPoint, frozenset[type[Outcome]]]] = MappingProxyType(
    {
        HookPoint.RUN_START: _ON_THE_WAY_IN,
        HookPoint.INPUT_RECEIVED: _ON_THE_WAY_IN,
        HookPoint.APPROVAL_RESOLVED: frozenset({Continue, Block, Escalate}),
        HookPoint.ROUTE_SELECT: _ON_THE_WAY_IN,
        HookPoint.CONTEXT_ASSEMBLE: _ON_THE_WAY_IN,
        HookPoint.MODEL_REQUEST: _ON_THE_WAY_IN,
        HookPoint.STREAM_CHUNK: _MODEL_REDOABLE,
        HookPoint.MODEL_RESPONSE: _MODEL_REDOABLE,
        HookPoint.TOOL_BEFORE: _ON_THE_WAY_IN | {Guide},
        HookPoint.TOOL_AFTER: _REDOABLE,
        HookPoint.OUTPUT_FINAL: frozenset({Continue, Block, Escalate}),
        HookPoint.RUN_ERROR: frozenset({Continue}),
        HookPoint.RUN_END: frozenset({Continue}),
    }
)
"""The outcomes allowed at each hook point."""

MODIFIABLE: Final[Mapping[HookPoint, frozenset[str]]] = MappingProxyType(
    {
        HookPoint.RUN_START: frozenset(),
        HookPoint.INPUT_RECEIVED: frozenset({"messages"}),
        HookPoint.APPROVAL_RESOLVED: frozenset(),
        HookPoint.ROUTE_SELECT: frozenset({"model_id"}),
        HookPoint.CONTEXT_ASSEMBLE: frozenset({"messages", "system_prompt", "tool_specs"}),
        HookPoint.MODEL_REQUEST: frozenset({"messages", "tool_choice"}),
        HookPoint.STREAM_CHUNK: frozenset({"chunk"}),
        HookPoint.MODEL_RESPONSE: frozenset({"message", "stop_reason"}),
        HookPoint.TOOL_BEFORE: frozenset({"input"}),
        HookPoint.TOOL_AFTER: frozenset({"result"}),
        HookPoint.OUTPUT_FINAL: frozenset({"message"}),
        HookPoint.RUN_ERROR: frozenset(),
        HookPoint.RUN_END: frozenset(),
    }
)
"""The event fields a ``Continue(modified=...)`` may change at each hook point; none means
that ``modified`` is not allowed there."""

DEFAULT_RETRY_BUDGET: Final = 2
"""Retries of one step a hook point allows unless the policy sets its own budget; a
``Guide`` that has the model call redone counts as one."""


def is_allowed(point: HookPoint, outcome: Outcome) -> bool:
    """Whether *outcome* may be returned at *point* (a modification counts separately)."""
    if type(outcome) not in ALLOWED[point]:
        return False
    return not (isinstance(outcome, Continue) and outcome.modified is not None) or bool(
        MODIFIABLE[point]
    )


def allowed_names(point: HookPoint) -> list[str]:
    """The outcomes allowed at *point*, in table order, for messages and the docs."""
    names = [kind.__name__ for kind in OUTCOME_TYPES]
    allowed = {kind.__name__ for kind in ALLOWED[point]}
    return [name for name in names if name in allowed]
