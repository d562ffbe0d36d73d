"""One agent pass: model turns and tool rounds until the model stops. The AgentStream terminal.

A pass first appends its input, the messages of the context the terminal receives, to the
history (as in Strands 1.62: a replaced input is what the history gets). Then it
alternates model calls and tool rounds, starting with the tool round an interrupt
halted, when there is one, so a resume replays the tools without asking the model again.
It ends with exactly one ``EventLoopStopEvent``: the model's own stop, an ``interrupt``
(tools are waiting for a human), ``cancelled``, ``limit_model_calls`` when the
invocation has made all the model calls it may, or ``context_window_overflow`` when a
model call raised ``ContextWindowOverflowError`` that no middleware or hook resolved.

The input joins the history as ``_history`` describes, so that what an earlier
invocation left behind (a user turn the model never answered, tool calls without
results) does not make the history one a provider rejects.

With a session, every message is saved as soon as it enters the history (see
``_session``): the input is saved before the pass, with the claim, and enters the stored
history with the next save; each model turn once it is complete (one whose tool calls
are to run is saved with its round stored for replay, as an interrupt stores one, so a
worker that takes over runs only the calls whose results were not recorded), and each
tool result as its call finishes (``_tool_executor``). The message of a round's results
is not saved on its own: the stored round already holds every result, and the next
model turn's save brings it. A takeover (see ``PassState.takeover``) whose history ends
on the model's final answer returns that answer without calling the model.

Each model call runs in a ``CutRegion``: a call still running ``GRACE_SECONDS`` after
``cancel()`` (a stalled stream, stuck InvokeModel middleware or hooks) is cut, and the
pass ends ``cancelled`` as if the call had seen the signal itself.

A structured run (``PassState.output``) ends on the model's valid output instead of its
first final answer: a final reply that gives none, and a call of the output tool that
does not validate, are answered in the history and the loop calls the model again
(``_structured_output`` has the rules and the budget). A takeover reads a recorded final
answer the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast, final

from stageware._generated.contexts import AgentStreamContext
from stageware._generated.events import (
    AgentStreamEvent,
    EventLoopStopEvent,
    ModelMessageEvent,
    ModelStopReason,
    ToolResultMessageEvent,
)
from stageware._generated.payloads import Message, Messages, StopReason, ToolUse
from stageware._runtime import Interrupt

from ._cancel_watch import GRACE_SECONDS, CutRegion
from ._core import AgentCore, PassState
from ._halt import Halt, HaltRun
from ._history import join_input
from ._interrupt_state import PendingToolExecution
from ._limits import MODEL_CALL_LIMIT_STOP
from ._model_call import ModelCall
from ._structured_output import (
    CUT_SHORT,
    REFUSALS,
    OutputAttempt,
    StructuredRun,
    supports_native_output,
)
from ._tool_executor import ToolExecutor, ToolRound
from .models import ContextWindowOverflowError
from .tools import error_result

__all__ = ["EventLoop", "build_stop_event", "empty_assistant_message"]

logger = logging.getLogger(__name__)


def empty_assistant_message() -> Message:
    """The message of a pass that stopped before the model produced one."""
    return {"role": "assistant", "content": []}


def build_stop_event(
    stop_reason: StopReason,
    message: Message,
    invocation_state: dict[str, Any],
    pass_state: PassState,
    interrupts: list[Interrupt] | None = None,
    structured_output: object = None,
) -> EventLoopStopEvent:
    """The stop event of a pass, with the pass's latency and request state."""
    request_state = invocation_state.get("request_state")
    return EventLoopStopEvent(
        stop_reason=stop_reason,
        message=message,
        metrics={"latencyMs": round((time.monotonic() - pass_state.started) * 1000)},
        request_state=cast("dict[str, Any]", request_state)
        if isinstance(request_state, dict)
        else {},
        interrupts=interrupts,
        structured_output=structured_output,
    )


@final
class EventLoop:
    """The AgentStream terminal of one agent, running one pass at a time.

    One per agent, like the model call and the tool executor it owns: the registry reuses
    a composed chain only while its terminal stays the same, so the terminals must outlive
    a single pass. The pass being run is set with :meth:`begin`; the agent runs one
    invocation at a time.
    """

    __slots__ = ("_core", "_executor", "_model_call", "_pass_state")

    def __init__(self, core: AgentCore) -> None:
        self._core = core
        self._model_call = ModelCall(core)
        self._executor = ToolExecutor(core)
        self._pass_state: PassState | None = None

    def begin(self, pass_state: PassState) -> None:
        """Make *pass_state* the pass the next :meth:`run` works on."""
        self._pass_state = pass_state

    @property
    def _pass(self) -> PassState:
        if self._pass_state is None:
            raise RuntimeError("EventLoop.run() called before begin()")
        return self._pass_state

    async def run(self, context: AgentStreamContext) -> AsyncIterator[AgentStreamEvent]:
        """Run the pass for *context*, yielding its events and ending with its stop event."""
        core = self._core
        core.check_agent(context)
        await self._append_input(context.messages)
        invocation_state = context.invocation_state
        answer = self._recorded_answer()
        output = self._pass.output
        if answer is not None and output is None:
            yield self.stop("end_turn", answer, invocation_state)
            return
        if answer is not None and output is not None:
            # A structured run reads the recorded answer as it would have read it live.
            output.native = supports_native_output(core.model)
            value, follow_up = _read_final_reply(output, answer)
            if follow_up is None:
                yield self.stop("end_turn", answer, invocation_state, structured_output=value)
                return
            await core.append_message(follow_up)
            await self._checkpoint()
        while True:
            pending = core.interrupts.pending_tool_execution
            # A round replayed in an open interrupt cycle is a resume's: one cancelled
            # part-way stays stored, as the cycle blocks new prompts until it is resumed.
            # Any other (a round a dead worker left) is an ordinary round.
            resumed = pending is not None and core.interrupts.activated
            made = False  # whether the model turn was made in this pass, just now
            if pending is not None:
                message = pending.tool_use_message
            else:
                if core.cancel.is_set():
                    yield self.stop("cancelled", empty_assistant_message(), invocation_state)
                    return
                if self._pass.refuse_model_call():
                    yield self._limit_stop(invocation_state)
                    return
                self._pass.metrics.cycles += 1
                result: ModelStopReason | None = None
                region = CutRegion(self._pass.cancel_watch, GRACE_SECONDS)
                model_call = region.guard(self._model_call.run(self._pass, invocation_state))
                # Every nested stream is closed here, in this task, if the pass is closed
                # early: left to the garbage collector, it would be finalised in another
                # task, outside the cancel scopes it opened.
                try:
                    async with aclosing(model_call) as call:
                        async for event in call:
                            # The stop reason is the model call's result, not a pass event.
                            if isinstance(event, ModelStopReason):
                                result = event
                            else:
                                yield event
                except HaltRun as halted:
                    # The response (if any) never enters the history.
                    yield await self._halt(halted.halt, invocation_state)
                    return
                except ContextWindowOverflowError as error:
                    # A result, not an exception: retrying the same request cannot help.
                    yield self._overflow_stop(error, invocation_state)
                    return
                if self._pass.model_call_refused and not core.cancel.is_set():
                    # The limit refused a retry: the response a hook retried is not used.
                    yield self._limit_stop(invocation_state)
                    return
                if result is None or core.cancel.is_set():
                    # Cancelled or cut mid-stream: the partial turn never enters the history.
                    yield self.stop("cancelled", empty_assistant_message(), invocation_state)
                    return
                message = result.message
                if result.stop_reason == "limit_tool_calls":
                    # Middleware answered for the model (CallLimits): its message is the
                    # result's only, as the model never said it. The history ends on the
                    # tool results, valid; the next input joins that turn.
                    yield self.stop(result.stop_reason, message, invocation_state)
                    return
                await core.append_message(message)
                if result.stop_reason != "tool_use":
                    await self._checkpoint()
                    yield ModelMessageEvent(message=message)
                    if output is None or result.stop_reason in REFUSALS:
                        yield self.stop(result.stop_reason, message, invocation_state)
                        return
                    value, follow_up = _read_final_reply(output, message, result.stop_reason)
                    if follow_up is None:
                        yield self.stop(
                            result.stop_reason, message, invocation_state, structured_output=value
                        )
                        return
                    # The reply stays in the history, answered by the request for the output.
                    await core.append_message(follow_up)
                    await self._checkpoint()
                    continue
                made = True
                if core.session is not None:
                    # Saved with the turn: a worker that takes over runs this round.
                    pending = PendingToolExecution(tool_use_message=message)
                    core.interrupts.pending_tool_execution = pending
            stopped = False
            try:
                if made:
                    await self._checkpoint()
                    yield ModelMessageEvent(message=message)
                tools = self._tool_round(message, pending, resumed, invocation_state)
                async with aclosing(tools) as round_:
                    async for round_event in round_:
                        stopped = isinstance(round_event, EventLoopStopEvent)
                        yield round_event
            except BaseException:
                # An ordinary round that failed, or whose pass was closed or cancelled,
                # is not kept for replay: the final save records the history as it is,
                # and the next input answers the calls left without results.
                if (
                    not resumed
                    and pending is not None
                    and (core.interrupts.pending_tool_execution is pending)
                ):
                    core.interrupts.pending_tool_execution = None
                raise
            if stopped:
                return

    async def _tool_round(
        self,
        message: Message,
        pending: PendingToolExecution | None,
        resumed: bool,
        invocation_state: dict[str, Any],
    ) -> AsyncGenerator[AgentStreamEvent, None]:
        """Run the tool calls of *message*; end with a stop event unless the loop goes on.

        *pending* is the stored round (its finished calls are not run again), *resumed*
        whether it is replayed in an open interrupt cycle.
        """
        core = self._core
        tool_uses = _tool_uses(message)
        round_ = ToolRound(results={} if pending is None else dict(pending.completed))
        if resumed and core.cancel.is_set():
            # A cancelled resume runs nothing and keeps the stored round and the human's
            # answers, so the caller can still resume the interrupt later.
            yield self.stop("cancelled", message, invocation_state)
            return
        output = self._pass.output
        attempt = None
        if output is not None and output.calls_output_tool(message):
            # The host answers the output tool's calls itself; the executor skips calls
            # that already have a result, as it does a replayed round's finished ones.
            attempt = output.from_calls(message)
            for tool_use_id, result in attempt.results.items():
                round_.results.setdefault(tool_use_id, result)
        tools = self._executor.run(tool_uses, round_, self._pass, invocation_state)
        async with aclosing(tools):
            async for event in tools:
                yield event
        if round_.interrupts and self._pass.halt is None:
            core.interrupts.pending_tool_execution = PendingToolExecution(
                tool_use_message=message, completed=dict(round_.results)
            )
            core.interrupts.activate()
            yield self.stop("interrupt", message, invocation_state, core.interrupts.pending())
            return
        if round_.skipped and resumed and pending is not None:
            # Cancelled part-way through a resumed round: remember what did run, so a later
            # resume does not run it twice.
            pending.completed = dict(round_.results)
            yield self.stop("cancelled", message, invocation_state)
            return
        halt = self._pass.halt
        if halt is not None and round_.interrupts:
            # A blocked call ends the run: the calls that asked a human never run.
            core.interrupts.end_tool_cycle()
        results = {**round_.results, **round_.skipped}
        if halt is not None:
            for use in tool_uses:
                results.setdefault(
                    use["toolUseId"],
                    error_result(use["toolUseId"], "The tool call was not run: the run halted."),
                )
        reply: Message = {
            "role": "user",
            "content": [{"toolResult": results[use["toolUseId"]]} for use in tool_uses],
        }
        # The cycle is over once its results are in the history, whether or not the
        # consumer ever pulls the next event; ended first, so that a MessageAddedEvent
        # hook that fails cannot leave the round stored for a replay that would answer
        # its calls a second time.
        core.interrupts.end_tool_cycle()
        await core.append_message(reply)
        yield ToolResultMessageEvent(message=reply)
        if halt is not None:
            yield await self._halt(halt, invocation_state)
            return
        if core.cancel.is_set():
            yield self.stop("cancelled", reply, invocation_state)
            return
        if output is not None and attempt is not None:
            if attempt.valid:
                yield self.stop(
                    "end_turn", message, invocation_state, structured_output=attempt.value
                )
                return
            # Not valid: the error results just sent are the correction; the loop goes on.
            output.spend(attempt, message)

    def stop(
        self,
        stop_reason: StopReason,
        message: Message,
        invocation_state: dict[str, Any],
        interrupts: list[Interrupt] | None = None,
        *,
        structured_output: object = None,
    ) -> EventLoopStopEvent:
        """Build the pass's stop event and note that the pass has produced it."""
        event = build_stop_event(
            stop_reason, message, invocation_state, self._pass, interrupts, structured_output
        )
        self._pass.last_stop = event
        return event

    async def _halt(self, halt: Halt, invocation_state: dict[str, Any]) -> EventLoopStopEvent:
        """End the pass a policy halted: the halt's message closes the history's user turn."""
        self._pass.halt = halt
        history = self._core.messages
        if history and history[-1]["role"] == "user":
            await self._core.append_message(halt.message)
        return self.stop(halt.stop_reason, halt.message, invocation_state)

    def _overflow_stop(
        self, error: ContextWindowOverflowError, invocation_state: dict[str, Any]
    ) -> EventLoopStopEvent:
        """The stop of a pass whose request did not fit the model's context window.

        The history is left as it is, ending on the user turn the model never answered
        (the input, or a tool round's results): valid, as after any early ending, so the
        next prompt joins that turn (``_history``). The stop's message is empty: no
        assistant text is made up.
        """
        self._pass.error = error
        logger.warning(
            "agent pass stopped: the request does not fit the model's context window (%s); "
            "shorten agent.messages or add a conversation manager",
            error,
        )
        return self.stop("context_window_overflow", empty_assistant_message(), invocation_state)

    def _limit_stop(self, invocation_state: dict[str, Any]) -> EventLoopStopEvent:
        """The stop of a pass out of model calls: the history's last message, as in Strands."""
        history = self._core.messages
        logger.warning(
            "agent pass stopped after %d model calls, the limit (max_model_calls); the "
            "history is complete, and calling the agent again continues from it",
            self._pass.metrics.model_calls,
        )
        message = history[-1] if history else empty_assistant_message()
        return self.stop(MODEL_CALL_LIMIT_STOP, message, invocation_state)

    async def _checkpoint(self) -> None:
        """Save what entered the history, if the agent keeps a session."""
        session = self._core.session
        if session is not None:
            await session.checkpoint(self._core)

    def _recorded_answer(self) -> Message | None:
        """The final answer a takeover finds already recorded, if the history ends on one.

        The dead worker saved the model's answer but not its invocation's end: the run
        is over, and asking the model again would answer the same turn twice.
        """
        history = self._core.messages
        if not self._pass.takeover or self._core.interrupts.pending_tool_execution is not None:
            return None
        if not history or history[-1]["role"] != "assistant":
            return None
        last = history[-1]
        return None if any("toolUse" in block for block in last["content"]) else last

    async def _append_input(self, messages: Messages) -> None:
        """Join the pass's input to the history (see ``_history``), firing MessageAddedEvent."""
        core = self._core
        self._pass.input_appended = True
        core.interrupts.pending_input = []
        joined = join_input(
            core.messages,
            messages,
            round_stored=core.interrupts.pending_tool_execution is not None,
        )
        if joined.merged_last is not None:
            await core.merge_into_last(joined.merged_last)
        for message in joined.appended:
            await core.append_message(message)


def _read_final_reply(
    output: StructuredRun, message: Message, stop_reason: StopReason | None = None
) -> tuple[object, Message | None]:
    """The output a final reply gave, or the user turn that asks the model again.

    *stop_reason* is the reply's (``None`` for a recorded answer read on a takeover).

    Raises:
        StructuredOutputError: When the run has no corrections left, or the model's
            output limit cut the output (see ``_structured_output``).
    """
    if output.native:
        attempt = output.from_text(message)
        if attempt.valid:
            return attempt.value, None
        if stop_reason == CUT_SHORT:
            raise output.cut_short(message, attempt.errors)
        output.spend(attempt, message)
        return None, output.correction(attempt)
    if stop_reason == CUT_SHORT and any("toolUse" in block for block in message["content"]):
        # Cut calls have no results: asking in a user turn would leave the history invalid.
        raise output.cut_short(message, output.from_calls(message).errors)
    if output.forced:
        # Told to call the output tool, and it answered in text again.
        output.spend(OutputAttempt(), message)
    return None, output.ask_for_tool()


def _tool_uses(message: Message) -> list[ToolUse]:
    uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
    if not uses:
        raise RuntimeError(
            "the model stopped with stop_reason 'tool_use' but its message has no toolUse "
            "block; the model (or an Output handler) produced an inconsistent result"
        )
    return uses
