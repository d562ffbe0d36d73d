"""A policy installed on one agent: the hook points bound to the agent's stage chains.

Each hook point is where ``schema/stages.yaml`` attaches it (stage, phase, direction);
the engine registers one handler per phase it needs, before any middleware the
application adds, so policy handlers are the outermost of each phase:

- AgentStream Input: starts the run's policy state, then ``run.start``,
  ``input.received`` and, on a resume, ``approval.resolved``.
- AgentStream Wrap: ``run.error`` when the pass raises.
- AgentStream Output: ``output.final``. ``run.end`` fires from the agent's
  ``AfterInvocationEvent``, so it fires however the run ends.
- InvokeModel Input: ``route.select``, ``context.assemble``; Wrap: ``model.request`` and
  ``stream.chunk``; Output: ``model.response``.
- ExecuteTool Input: ``tool.before``; Output: ``tool.after``.

An outcome other than ``Continue`` is carried out through the host: ``Block`` and
``Escalate`` raise ``HaltRun``, ``Retry`` raises ``RedoStep`` (or, its budget spent,
blocks), ``Guide`` raises ``RefuseCall`` at ``tool.before`` and elsewhere ``RedoStep``
with the feedback (within the same budget), ``Suspend`` raises an ``InterruptException``
with the approval's id, bound to the step's fingerprint, and a reason that shows the
approver the step (``_approval``).
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast, final

from pydantic import BaseModel

from stageware._generated.contexts import (
    AgentStreamContext,
    ExecuteToolContext,
    InvokeModelContext,
)
from stageware._generated.events import (
    AgentStreamEvent,
    EventLoopStopEvent,
    InvokeModelEvent,
    ModelStopReason,
    ModelStreamChunkEvent,
)
from stageware._generated.events import ToolResultEvent as ToolResultStageEvent
from stageware._generated.payloads import Message, Metrics
from stageware._generated.policy_events import (
    ApprovalResolvedEvent,
    ContextEvent,
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
from stageware._generated.policy_points import HookPoint
from stageware._generated.results import AgentStreamResult, ExecuteToolResult, InvokeModelResult
from stageware._generated.stages import AgentStreamStage, ExecuteToolStage, InvokeModelStage
from stageware._host._halt import Halt, HaltRun, RedoStep, RefuseCall
from stageware._host._hook_events import AfterInvocationEvent
from stageware._host.models import Model, ResponseAssembler
from stageware._host.sessions import Escalation
from stageware._runtime import Interrupt, InterruptException, copy_payload

from ._approval import (
    ApprovalCheck,
    fingerprint,
    interrupt_id,
    parse_interrupt_id,
    read_record,
    step_summary,
)
from ._decide import PolicyRun, Verdict, decide
from ._modified import ModificationError
from ._outcomes import Block, Escalate, Guide, Retry, Suspend
from ._principal import Principal, principal_of
from ._timeouts import deadline_fields

if TYPE_CHECKING:
    from stageware._host._core import AgentCore

    from ._approval import Approval
    from ._engine import PolicyEngine
    from ._identity import Approver

__all__ = ["AgentPolicy", "model_id_of"]

logger = logging.getLogger("stageware.policy")

# Stops that are not the model's final answer: output.final does not fire for them.
_NO_FINAL_ANSWER = frozenset(
    {
        "interrupt",
        "blocked",
        "escalated",
        "cancelled",
        "limit_model_calls",
        "context_window_overflow",
        "limit_tool_calls",
        "tool_use",
    }
)


def model_id_of(model: Model) -> str:
    """The id ``route.select`` reports for *model*: its ``model_id``, or its class name."""
    model_id = getattr(model, "model_id", None)
    return model_id if isinstance(model_id, str) else type(model).__name__


@final
class AgentPolicy:
    """The engine's state on one agent: the current run and the approvals it reported."""

    __slots__ = ("_core", "_engine", "_reported", "_run")

    def __init__(self, engine: PolicyEngine, core: AgentCore) -> None:
        self._engine = engine
        self._core = core
        self._run: PolicyRun | None = None
        # approval.resolved fires once per answer in this process.
        self._reported: set[str] = set()

    def _identify(self, interrupt_id: str, answer: Approval) -> Approver:
        # Read at answer time: whether a store can take the answer instead decides the advice.
        return self._engine.identify(interrupt_id, answer, stored=self._core.session is not None)

    def install(self) -> None:
        """Register the handlers the engine's hook points need on the agent."""
        core, has = self._core, self._has
        registry = core.registry
        core.answer_checks.append(ApprovalCheck(self._identify))
        registry.add_middleware(AgentStreamStage.Input, self._agent_input)
        if has(HookPoint.RUN_ERROR):
            registry.add_middleware(AgentStreamStage.Wrap, self._agent_wrap)
        if has(HookPoint.OUTPUT_FINAL):
            registry.add_middleware(AgentStreamStage.Output, self._agent_output)
        if has(HookPoint.ROUTE_SELECT) or has(HookPoint.CONTEXT_ASSEMBLE):
            registry.add_middleware(InvokeModelStage.Input, self._model_input)
        if has(HookPoint.MODEL_REQUEST) or has(HookPoint.STREAM_CHUNK):
            registry.add_middleware(InvokeModelStage.Wrap, self._model_wrap)
        if has(HookPoint.MODEL_RESPONSE):
            registry.add_middleware(InvokeModelStage.Output, self._model_output)
        if has(HookPoint.TOOL_BEFORE) or has(HookPoint.TOOL_AFTER):
            registry.add_middleware(ExecuteToolStage.Input, self._tool_input)
        if has(HookPoint.TOOL_AFTER):
            registry.add_middleware(ExecuteToolStage.Output, self._tool_output)
        core.hooks.add(self._run_end, AfterInvocationEvent)

    def _has(self, point: HookPoint) -> bool:
        return bool(self._engine.attached(point))

    def _answers(self) -> dict[str, list[Interrupt]]:
        """The answered policy approvals by step (id without fingerprint); during a resume
        only is there any."""
        index: dict[str, list[Interrupt]] = {}
        for answered in self._core.interrupts.answered().values():
            parsed = parse_interrupt_id(answered.id)
            if parsed is not None:
                index.setdefault(parsed.key, []).append(answered)
        return index

    # -- the run -------------------------------------------------------------------------

    def _begin_run(self, invocation_state: Mapping[str, Any] | None = None) -> PolicyRun:
        core = self._core
        pass_state = core.current_pass
        self._run = PolicyRun(
            run_id=uuid.uuid4().hex,
            session_id=None if core.session is None else core.session.id,
            agent_name=getattr(core.handle, "name", "agent"),
            agent_id=core.handle.agent_id,
            decisions=[] if pass_state is None else pass_state.decisions,
            trace=None if pass_state is None else pass_state.trace,
            principal=principal_of(invocation_state),
        )
        return self._run

    @property
    def run(self) -> PolicyRun:
        # A stage outside an invocation's AgentStream pass has a run of its own.
        return self._run if self._run is not None else self._begin_run()

    async def _at(
        self,
        point: HookPoint,
        event: BaseModel,
        step_key: str,
        check: Callable[[BaseModel], None] | None = None,
    ) -> Verdict:
        """Decide *point* and carry out a stopping outcome; return the Continue verdict."""
        interrupts = self._core.interrupts
        verdict = await decide(
            point,
            event,
            self._engine.attached(point),
            self.run,
            step_key,
            self._answers(),
            interrupts.cycle,
            len(self._core.messages),
            check,
        )
        outcome, entry = verdict.outcome, verdict.entry
        if outcome is None or entry is None:
            return verdict
        name = entry.name
        if isinstance(outcome, Guide) and point is HookPoint.TOOL_BEFORE:
            raise RefuseCall(
                f"The tool call was refused by policy {name} and did not run: {outcome.feedback}"
            )
        if isinstance(outcome, Retry | Guide):
            outcome = self._redo(point, step_key, name, outcome)
        if isinstance(outcome, Suspend):
            bound = fingerprint(
                point.value,
                name,
                step_key,
                verdict.event,
                interrupts.cycle,
                len(self._core.messages),
                agent_id=self.run.agent_id,
            )
            approvers = outcome.approvers
            asked = interrupt_id(point.value, name, step_key, bound)
            earlier = interrupts.interrupts.get(asked)
            raise InterruptException(
                Interrupt(
                    id=asked,
                    name=name,
                    reason={
                        "policy": name,
                        "hook": point.value,
                        "reason": outcome.reason,
                        "details": dict(outcome.details or {}),
                        # What the approver is shown is what the fingerprint binds.
                        "step": step_summary(verdict.event),
                        "fingerprint": bound,
                        "approvers": None if approvers is None else sorted(approvers),
                        # Whom the run acts for, for the approver to see: the answer is
                        # not bound to it, and a resume may act for someone else.
                        "principal": _principal_shown(self.run.principal),
                        **deadline_fields(
                            outcome,
                            datetime.now(UTC),
                            None if earlier is None else _reason_of(earlier),
                        ),
                    },
                )
            )
        if isinstance(outcome, Escalate):
            raise HaltRun(self._escalate(point, name, outcome, verdict.event))
        assert isinstance(outcome, Block)
        raise HaltRun(
            Halt(
                stop_reason="blocked",
                hook=point.value,
                middleware=name,
                reason=outcome.reason,
                message=_assistant(self._engine.blocked_message),
            )
        )

    def _redo(self, point: HookPoint, step_key: str, name: str, outcome: Retry | Guide) -> Block:
        """Have the step redone (``RedoStep``) within its retry budget; once it is spent,
        the ``Block`` it becomes. A ``Guide``'s feedback goes with the redo, for the model."""
        if isinstance(outcome, Guide):
            reason, said = outcome.feedback, "the last guide said"
            feedback: str | None = (
                f"Your previous response was refused by policy {name} and discarded: {reason}"
            )
        else:
            reason, said, feedback = outcome.reason, "the last retry asked", None
        budget = self._engine.retry_budget(point)
        key = (point, step_key)
        taken = self.run.retries.get(key, 0)
        if taken < budget:
            self.run.retries[key] = taken + 1
            raise RedoStep(reason, feedback)
        return Block(f"retry budget of {budget} at {point.value} spent; {said}: {reason}")

    def _escalate(self, point: HookPoint, name: str, outcome: Escalate, event: BaseModel) -> Halt:
        """The halt of an escalated run; with a session, its record for the final save."""
        core = self._core
        escalation_id: str | None = None
        if core.session is None:
            logger.warning(
                "%s escalated at %s to queue %r, but the agent has no session store to "
                "record the escalation in; the run ends escalated, and only its result says so",
                name,
                point.value,
                outcome.queue,
            )
        else:
            # Written in the same transaction as the session's final save (``_session``).
            escalation = Escalation.new(
                core.session.id,
                queue=outcome.queue,
                hook=point.value,
                middleware=name,
                reason=outcome.reason,
                event=event.model_dump(mode="json"),
            )
            core.pending_escalation = escalation
            escalation_id = escalation.id
        return Halt(
            stop_reason="escalated",
            hook=point.value,
            middleware=name,
            reason=outcome.reason,
            message=_assistant(self._engine.escalated_message),
            escalation_id=escalation_id,
        )

    async def _notify(self, point: HookPoint, event: BaseModel, step_key: str) -> None:
        """Fire a hook point whose only allowed outcome is Continue."""
        if self._has(point):
            await self._at(point, event, step_key)

    # -- AgentStream -----------------------------------------------------------------------

    async def _agent_input(self, context: AgentStreamContext) -> AgentStreamContext:
        run = self._begin_run(context.invocation_state)
        step = f"run-{len(self._core.messages)}"
        # First: the approval is resolved before any step, the suspended one included,
        # goes ahead or is blocked.
        if self._has(HookPoint.APPROVAL_RESOLVED):
            await self._report_approvals(run)
        if self._has(HookPoint.RUN_START):
            await self._at(
                HookPoint.RUN_START,
                RunStartEvent(run_id=run.run_id, agent_name=run.agent_name),
                step,
            )
        if self._has(HookPoint.INPUT_RECEIVED):
            verdict = await self._at(
                HookPoint.INPUT_RECEIVED,
                InputEvent(run_id=run.run_id, messages=context.messages),
                step,
            )
            if verdict.modified:
                assert isinstance(verdict.event, InputEvent)
                context = context.replace(messages=verdict.event.messages)
        return context

    async def _report_approvals(self, run: PolicyRun) -> None:
        """Fire ``approval.resolved`` for each policy approval answered since last reported."""
        for answered in self._core.interrupts.answered().values():
            parsed = parse_interrupt_id(answered.id)
            approval = read_record(answered.response)
            if parsed is None or approval is None or answered.id in self._reported:
                continue
            self._reported.add(answered.id)
            await self._at(
                HookPoint.APPROVAL_RESOLVED,
                ApprovalResolvedEvent(
                    run_id=run.run_id,
                    interrupt_id=answered.id,
                    suspended_at=parsed.hook,
                    middleware=parsed.middleware,
                    approved=approval.approved,
                    approver=approval.approver,
                    comment=approval.comment,
                ),
                answered.id,
            )

    async def _agent_wrap(
        self,
        context: AgentStreamContext,
        next_fn: Callable[[AgentStreamContext], AsyncIterator[AgentStreamEvent]],
    ) -> AsyncIterator[AgentStreamEvent]:
        try:
            # The registry closes the generators of the chain it built.
            async for event in next_fn(context):
                yield event
        except (HaltRun, InterruptException, RedoStep):
            raise
        except Exception as error:
            await self._notify(
                HookPoint.RUN_ERROR,
                RunErrorEvent(
                    run_id=self.run.run_id, error_type=type(error).__name__, error=str(error)
                ),
                f"run-{len(self._core.messages)}",
            )
            raise

    async def _agent_output(self, result: AgentStreamResult) -> AgentStreamResult:
        stop = result.result
        if stop.stop_reason in _NO_FINAL_ANSWER or stop.message["role"] != "assistant":
            return result
        verdict = await self._at(
            HookPoint.OUTPUT_FINAL,
            OutputEvent(run_id=self.run.run_id, stop_reason=stop.stop_reason, message=stop.message),
            f"run-{len(self._core.messages)}",
        )
        if not verdict.modified:
            return result
        assert isinstance(verdict.event, OutputEvent)
        message = verdict.event.message
        history = self._core.messages
        if history and history[-1] is stop.message:
            # What the user is shown is what the conversation keeps.
            history[-1] = message
        return result.replace(
            result=EventLoopStopEvent(
                stop_reason=stop.stop_reason,
                message=message,
                metrics=stop.metrics,
                request_state=stop.request_state,
                interrupts=stop.interrupts,
                structured_output=stop.structured_output,
            )
        )

    async def _run_end(self, event: AfterInvocationEvent) -> None:
        run = self.run
        result = event.result
        try:
            if self._has(HookPoint.RUN_END):
                metrics: Metrics = {"latencyMs": 0 if result is None else result.metrics.latency_ms}
                await self._at(
                    HookPoint.RUN_END,
                    RunEndEvent(
                        run_id=run.run_id,
                        stop_reason=None if result is None else result.stop_reason,
                        metrics=metrics,
                    ),
                    f"run-{len(self._core.messages)}",
                )
        finally:
            self._run = None

    # -- InvokeModel -----------------------------------------------------------------------

    def _turn(self) -> str:
        return f"turn-{len(self._core.messages)}"

    async def _model_input(self, context: InvokeModelContext) -> InvokeModelContext:
        run, step = self.run, self._turn()
        if self._has(HookPoint.ROUTE_SELECT):
            current = model_id_of(context.model)
            verdict = await self._at(
                HookPoint.ROUTE_SELECT,
                RouteEvent(
                    run_id=run.run_id,
                    model_id=current,
                    tool_names=[spec["name"] for spec in context.tool_specs],
                ),
                step,
                self._check_route,
            )
            if verdict.modified:
                assert isinstance(verdict.event, RouteEvent)
                if verdict.event.model_id != current:
                    context = context.replace(model=self._engine.models[verdict.event.model_id])
        if self._has(HookPoint.CONTEXT_ASSEMBLE):
            verdict = await self._at(
                HookPoint.CONTEXT_ASSEMBLE,
                ContextEvent(
                    run_id=run.run_id,
                    messages=context.messages,
                    system_prompt=context.system_prompt,
                    tool_specs=context.tool_specs,
                ),
                step,
            )
            if verdict.modified:
                assert isinstance(verdict.event, ContextEvent)
                context = context.replace(
                    messages=verdict.event.messages,
                    system_prompt=verdict.event.system_prompt,
                    tool_specs=verdict.event.tool_specs,
                )
        return context

    def _check_route(self, event: BaseModel) -> None:
        assert isinstance(event, RouteEvent)
        models = self._engine.models
        if event.model_id not in models:
            known = ", ".join(sorted(models)) or "none; pass models= to the policy"
            raise ModificationError(
                f"route.select chose model {event.model_id!r}, which the policy does not know "
                f"(known: {known})"
            )

    async def _model_wrap(
        self,
        context: InvokeModelContext,
        next_fn: Callable[[InvokeModelContext], AsyncIterator[InvokeModelEvent]],
    ) -> AsyncIterator[InvokeModelEvent]:
        run, step = self.run, self._turn()
        if self._has(HookPoint.MODEL_REQUEST):
            current = self._core.current_pass
            output = None if current is None else current.output
            verdict = await self._at(
                HookPoint.MODEL_REQUEST,
                ModelRequestEvent(
                    run_id=run.run_id,
                    model_id=model_id_of(context.model),
                    messages=context.messages,
                    tool_choice=context.tool_choice,
                    # What a structured run asks for, to inspect or refuse; not modifiable.
                    structured_output_name=None if output is None else output.schema.name,
                    structured_output_schema=None
                    if output is None
                    else copy.deepcopy(output.schema.json_schema),
                ),
                step,
            )
            if verdict.modified:
                assert isinstance(verdict.event, ModelRequestEvent)
                context = context.replace(
                    messages=verdict.event.messages, tool_choice=verdict.event.tool_choice
                )
        if not self._has(HookPoint.STREAM_CHUNK):
            async for event in next_fn(context):
                yield event
            return
        # Chunks a policy changed are assembled again, so the message the model call ends
        # with (and the history gets) is the one the caller saw.
        assembler = ResponseAssembler()
        changed = False
        async for event in next_fn(context):
            if isinstance(event, ModelStreamChunkEvent):
                verdict = await self._at(
                    HookPoint.STREAM_CHUNK,
                    StreamChunkEvent(run_id=run.run_id, chunk=event.chunk),
                    step,
                )
                if verdict.modified:
                    assert isinstance(verdict.event, StreamChunkEvent)
                    event = ModelStreamChunkEvent(chunk=verdict.event.chunk)
                    changed = True
                assembler.add(event.chunk)
            elif changed:  # the stop event, after chunks a policy changed
                _, message, _, _ = assembler.finish()
                event = ModelStopReason(
                    stop_reason=event.stop_reason,
                    message=message,
                    usage=event.usage,
                    metrics=event.metrics,
                )
            yield event

    async def _model_output(self, result: InvokeModelResult) -> InvokeModelResult:
        stop = result.result
        verdict = await self._at(
            HookPoint.MODEL_RESPONSE,
            ModelResponseEvent(
                run_id=self.run.run_id,
                stop_reason=stop.stop_reason,
                message=stop.message,
                usage=stop.usage,
            ),
            self._turn(),
        )
        if not verdict.modified:
            return result
        assert isinstance(verdict.event, ModelResponseEvent)
        return result.replace(
            result=ModelStopReason(
                stop_reason=verdict.event.stop_reason,
                message=verdict.event.message,
                usage=stop.usage,
                metrics=stop.metrics,
            )
        )

    # -- ExecuteTool -----------------------------------------------------------------------

    async def _tool_input(self, context: ExecuteToolContext) -> ExecuteToolContext:
        run = self.run
        tool_use = context.tool_use
        run.tool_names[tool_use["toolUseId"]] = tool_use["name"]
        if not self._has(HookPoint.TOOL_BEFORE):
            return context
        verdict = await self._at(
            HookPoint.TOOL_BEFORE,
            ToolCallEvent(
                run_id=run.run_id,
                tool_name=tool_use["name"],
                tool_use_id=tool_use["toolUseId"],
                # A copy: changing the event in place must not rewrite the model's call.
                input=copy_payload(tool_use["input"]),
            ),
            tool_use["toolUseId"],
        )
        if not verdict.modified:
            return context
        assert isinstance(verdict.event, ToolCallEvent)
        return context.replace(tool_use={**tool_use, "input": verdict.event.input})

    async def _tool_output(self, result: ExecuteToolResult) -> ExecuteToolResult:
        run = self.run
        done = result.result
        tool_use_id = done.tool_result["toolUseId"]
        verdict = await self._at(
            HookPoint.TOOL_AFTER,
            ToolResultEvent(
                run_id=run.run_id,
                tool_name=run.tool_names.get(tool_use_id, ""),
                tool_use_id=tool_use_id,
                result=done.tool_result,
                error=None if done.exception is None else str(done.exception),
            ),
            tool_use_id,
        )
        if not verdict.modified:
            return result
        assert isinstance(verdict.event, ToolResultEvent)
        return result.replace(
            result=ToolResultStageEvent(tool_result=verdict.event.result, exception=done.exception)
        )


def _reason_of(interrupt: Interrupt) -> Mapping[str, Any] | None:
    reason = interrupt.reason
    return cast(Mapping[str, Any], reason) if isinstance(reason, dict) else None


def _assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"text": text}]}


def _principal_shown(principal: Principal | None) -> dict[str, Any] | None:
    """The run's principal as an approval's reason records it (id and roles)."""
    if principal is None:
        return None
    return {"id": principal.id, "roles": sorted(principal.roles)}
