"""``CallLimits``: how many tool calls one run may make, in all and per tool.

The rules it keeps:

- **Per run.** A run is one invocation of the agent (``agent(...)``, ``invoke_async``,
  ``stream_async``) together with its resumes: a run that stops on an interrupt goes on
  when it is resumed, with its counters and its stop, so an interrupt cannot buy a run
  more calls. An AgentStream Wrap handler puts the run's counters in its
  ``invocation_state`` under a key of this object's own, so a dict the application
  passes to several runs carries nothing from one to the next, and two agents (or two
  ``CallLimits``) never share a counter. When the pass stops on an interrupt, the
  counters wait in the agent's ``state`` (JSON data that travels with the session, so
  a resume in another process finds them), under a key made from the limits; any other
  stop deletes them, and the next invocation starts from zero.
- **Counted where a call runs.** The ExecuteTool Wrap handler checks and counts a call in
  one step, with no await between, so concurrent calls of one model turn (anyio tasks
  on one event loop) are counted exactly: with a limit of N, N run. A call refused by an
  earlier phase (a policy's ``Suspend`` or ``Block`` at ``tool.before``) never reaches
  it and is not counted; a refused call is not counted either, nor a call that raised
  an interrupt (the resume runs it again and counts it then).
- **At the limit.** ``on_limit="error"`` (the default) answers a call over its limit with
  an error result the model reads, so the model can finish with what it has.
  ``on_limit="stop"`` does the same for the call (every tool call needs its result) and
  ends the run before the model is called again: an InvokeModel Wrap handler answers for
  the model, with ``stop_reason="limit_tool_calls"`` and a message that names the limit.
  The host keeps that message out of the history (the model never said it): the history
  ends on the tool results, and the next input joins that turn.
- **Model calls** have their limit on the agent already, ``Agent(max_model_calls=...)``
  (per invocation, retries included, ``stop_reason="limit_model_calls"``); this module
  does not count them a second time.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Mapping, MutableMapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, cast, final

from stageware import (
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    EventLoopStopEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    InterruptException,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    MiddlewareHost,
    ModelStopReason,
    ToolInterruptEvent,
    ToolResultEvent,
)

__all__ = ["LIMIT_TOOL_CALLS_STOP", "CallLimits", "OnLimit"]

OnLimit: TypeAlias = Literal["error", "stop"]
"""What a tool call over its limit does: an error result (``"error"``), or that and the
end of the run (``"stop"``)."""

LIMIT_TOOL_CALLS_STOP: Final = "limit_tool_calls"


@dataclass(slots=True)
class _Counts:
    """One run's counters."""

    total: int = 0
    per_tool: dict[str, int] = field(default_factory=dict[str, int])
    stopped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "per_tool": dict(self.per_tool), "stopped": self.stopped}

    @classmethod
    def from_json(cls, data: object) -> _Counts:
        """Counters an interrupted pass left; anything else (a hand-edited state) is zero."""
        if not isinstance(data, dict):
            return cls()
        fields = cast("dict[str, object]", data)
        total, per_tool, stopped = (
            fields.get("total"),
            fields.get("per_tool"),
            fields.get("stopped"),
        )
        if not isinstance(total, int) or not isinstance(per_tool, dict):
            return cls()
        tools = {
            name: used
            for name, used in cast("dict[object, object]", per_tool).items()
            if isinstance(name, str) and isinstance(used, int)
        }
        return cls(total, tools, stopped if isinstance(stopped, str) else None)


@final
class CallLimits:
    """Limit the tool calls of each run, in all and per tool.

    Install it on an agent in one call:

    ```python
    CallLimits(max_tool_calls=10, per_tool={"search": 3}).install(agent)
    ```

    Args:
        max_tool_calls: How many tool calls one run may make in all; ``None``, no limit.
        per_tool: How many calls of a tool one run may make, by tool name.
        on_limit: ``"error"``: a call over a limit gets an error result the model reads.
            ``"stop"``: that, and the run ends before the next model call, with
            ``stop_reason="limit_tool_calls"``.

    Raises:
        ValueError: No limit given, a limit below 1, an empty tool name, or an unknown
            ``on_limit``.
        TypeError: A limit that is not an ``int``.
    """

    __slots__ = ("_key", "_max_tool_calls", "_on_limit", "_per_tool", "_state_key")

    def __init__(
        self,
        *,
        max_tool_calls: int | None = None,
        per_tool: Mapping[str, int] | None = None,
        on_limit: OnLimit = "error",
    ) -> None:
        if max_tool_calls is not None:
            _check_limit("max_tool_calls", max_tool_calls)
        limits = dict(per_tool or {})
        for name, limit in limits.items():
            if not isinstance(cast(object, name), str) or not name.strip():
                raise ValueError(f"CallLimits: per_tool has the key {name!r}, not a tool name")
            _check_limit(f"per_tool[{name!r}]", limit)
        if max_tool_calls is None and not limits:
            raise ValueError("CallLimits: give max_tool_calls, per_tool or both")
        if on_limit not in ("error", "stop"):
            raise ValueError(f"CallLimits: on_limit must be 'error' or 'stop', got {on_limit!r}")
        self._max_tool_calls = max_tool_calls
        self._per_tool: Mapping[str, int] = limits
        self._on_limit: OnLimit = on_limit
        # The run's counters are found under this key: this object's, no other's.
        self._key = f"stageware.middleware.CallLimits:{uuid.uuid4().hex}"
        # Where an interrupted run's counters wait in the agent's state: the same in every
        # process that builds these limits, so a resume elsewhere finds them.
        limits_json = json.dumps([max_tool_calls, sorted(limits.items()), on_limit])
        digest = hashlib.sha256(limits_json.encode()).hexdigest()[:16]
        self._state_key = f"stageware.middleware.CallLimits:{digest}"

    def install(self, agent: MiddlewareHost) -> None:
        """Register the handlers on *agent*: the run's counters, the tool-call limit,
        and with ``on_limit="stop"`` the model-call stop."""
        agent.add_middleware(AgentStreamStage.Wrap, self.keep_run)
        agent.add_middleware(ExecuteToolStage.Wrap, self.limit_tool_call)
        if self._on_limit == "stop":
            agent.add_middleware(InvokeModelStage.Wrap, self.stop_at_limit)

    async def keep_run(
        self, context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        """AgentStream Wrap: the pass counts on from where an interrupted pass of its run
        stopped, or from zero; stopped on an interrupt, it leaves its counters for the
        resume in the agent's state."""
        state = _agent_state(context)
        counts = _Counts() if state is None else _Counts.from_json(state.get(self._state_key))
        context.invocation_state[self._key] = counts
        interrupted = False
        try:
            async with aclosing(next_fn(context)) as events:
                async for event in events:
                    if isinstance(event, EventLoopStopEvent):
                        interrupted = event.stop_reason == "interrupt"
                    yield event
        except InterruptException:
            interrupted = True
            raise
        finally:
            if state is not None:
                if interrupted:
                    state[self._state_key] = counts.to_json()
                else:
                    state.pop(self._state_key, None)

    async def limit_tool_call(
        self, context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        """ExecuteTool Wrap: run the call if the run has calls left, else answer it."""
        counts, refusal = self._take(context)
        if refusal is None:
            interrupted = False
            try:
                async with aclosing(next_fn(context)) as events:
                    async for event in events:
                        interrupted = interrupted or isinstance(event, ToolInterruptEvent)
                        yield event
            except InterruptException:
                interrupted = True
                raise
            finally:
                if interrupted:
                    # The call did not happen: the resume runs it again, and counts it then.
                    name = context.tool_use["name"]
                    counts.total -= 1
                    counts.per_tool[name] -= 1
                    if not counts.per_tool[name]:
                        del counts.per_tool[name]
            return
        yield ToolResultEvent(
            {
                "toolUseId": context.tool_use["toolUseId"],
                "status": "error",
                "content": [{"text": f"Error: {refusal}"}],
            }
        )

    async def stop_at_limit(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """InvokeModel Wrap: once a limit stopped the run, answer for the model."""
        counts = context.invocation_state.get(self._key)
        stopped = counts.stopped if isinstance(counts, _Counts) else None
        if stopped is None:
            async with aclosing(next_fn(context)) as events:
                async for event in events:
                    yield event
            return
        yield ModelStopReason(
            LIMIT_TOOL_CALLS_STOP,
            {"role": "assistant", "content": [{"text": f"Stopped: {stopped}."}]},
            {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
            {"latencyMs": 0},
        )

    def _take(self, context: ExecuteToolContext) -> tuple[_Counts, str | None]:
        """Count the call if it is within every limit; else why not. No await: atomic."""
        state = context.invocation_state
        counts = state.get(self._key)
        if not isinstance(counts, _Counts):
            # Registered without keep_run: counters of this pass from here on.
            counts = state[self._key] = _Counts()
        name = context.tool_use["name"]
        used = counts.per_tool.get(name, 0)
        tool_limit = self._per_tool.get(name)
        refusal: str | None = None
        if tool_limit is not None and used >= tool_limit:
            refusal = f"the tool call limit is reached: {name} may be called {tool_limit} "
            refusal += "time per run" if tool_limit == 1 else "times per run"
        elif self._max_tool_calls is not None and counts.total >= self._max_tool_calls:
            refusal = (
                f"the tool call limit is reached: this run may make {self._max_tool_calls} "
                "tool call(s) in all"
            )
        if refusal is not None:
            if self._on_limit == "stop" and counts.stopped is None:
                counts.stopped = refusal
            return counts, refusal
        counts.total += 1
        counts.per_tool[name] = used + 1
        return counts, None

    def __repr__(self) -> str:
        return (
            f"CallLimits(max_tool_calls={self._max_tool_calls}, "
            f"per_tool={dict(self._per_tool)}, on_limit={self._on_limit!r})"
        )


def _agent_state(context: AgentStreamContext) -> MutableMapping[str, Any] | None:
    """The state of a stageware ``Agent``; a harness of one's own has none to keep."""
    from stageware import Agent  # loaded already when a pass runs; not on import

    return context.agent.state if isinstance(context.agent, Agent) else None


def _check_limit(where: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"CallLimits: {where} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"CallLimits: {where} must be at least 1, got {value}")
