"""One invocation of an agent: the run loop around the AgentStream chain.

In order:

1. A resume stores the human's answers, and its input is whatever input an agent-stream
   gate held back; otherwise the prompt becomes the pass's input messages.
2. With a session store, the session is claimed (saved with the answers, or with a
   prompt's messages as the held-back input, under this worker's lease; see
   ``_session``). A refused claim undoes step 1 and ends the
   invocation before anything ran; so does a prompt for a session whose last invocation
   never finished, which only ``agent()`` with no prompt may continue (a takeover).
3. ``BeforeInvocationEvent`` fires.
4. The AgentStream chain runs on a context carrying a copy of the input, with the event
   loop as its terminal. The terminal appends the context's messages to the history (as
   in Strands 1.62), so a replaced input is what the history and the model get, and a
   pass that middleware short-circuits records no input. An ``InterruptException`` from
   AgentStream middleware is registered here (the single registration site for
   agent-stream interrupts) and ends the pass with an ``interrupt`` stop event whose
   message is the last one of the history; if the input had not entered the history yet,
   it is kept for the resume. An interrupt after the pass produced its stop event is
   refused, because a resume would call the model a second time.
5. The stop event the invocation reports is the last ``EventLoopStopEvent`` the chain
   yielded; a chain that dropped it is an error. The chain runs in a ``CutRegion`` under
   the invocation's ``CancelWatch``: a pass still running ``PASS_CUTOFF_SECONDS`` after
   ``cancel()`` (stuck AgentStream middleware, say) is cut, and without a stop event of
   its own it ends with a ``cancelled`` one built here.
6. However the invocation ends (its stop event, an error, the caller closing the stream),
   an invocation with nothing owed a resume ends the interrupt cycle, releasing every
   answer; then the session is saved, releasing the lease, and ``AfterInvocationEvent``
   fires.

A structured run (``output_type=``) remembers the fingerprint of its output's schema with
an interrupt it stops on, and its resume must ask for the same output (step 1 refuses
another, or none, before anything is stored), so the resumed run returns the type its
caller expects. The result's output is checked against the schema once more: AgentStream
middleware may have replaced the stop event's ``structured_output``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, final

import anyio

from stageware._generated.contexts import AgentStreamContext
from stageware._generated.events import AgentStreamEvent, EventLoopStopEvent
from stageware._generated.payloads import Message, Messages
from stageware._generated.stages import AgentStreamStage
from stageware._runtime import Interrupt, InterruptException

from ._agent_result import AgentResult, AgentResultEvent
from ._cancel_watch import GRACE_SECONDS, PASS_CUTOFF_SECONDS, CancelWatch, CutRegion
from ._core import AgentCore, PassState
from ._event_loop import EventLoop, build_stop_event, empty_assistant_message
from ._halt import Halt, HaltRun
from ._hook_events import AfterInvocationEvent, BeforeInvocationEvent
from ._interrupt_state import InterruptState, parse_interrupt_responses
from ._prompt import prompt_messages
from ._structured_errors import StructuredOutputError

if TYPE_CHECKING:
    from ._structured_output import StructuredRun
    from .tracing._spans import InvocationTrace

__all__ = ["Invocation"]


@final
class Invocation:
    """Runs one ``agent(...)`` call and streams its events, ending with its result."""

    __slots__ = ("_core", "_loop", "_output", "_trace")

    def __init__(
        self,
        core: AgentCore,
        loop: EventLoop,
        trace: InvocationTrace | None,
        output: StructuredRun | None = None,
    ) -> None:
        self._core = core
        self._loop = loop
        self._trace = trace
        self._output = output

    async def stream(
        self, prompt: object, invocation_state: dict[str, Any]
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[Any], None]:
        """Yield the pass's events, then one ``AgentResultEvent``.

        Raises:
            TypeError: If the agent is waiting for interrupt responses and *prompt* is not a
                resume, or *prompt* has an unsupported shape.
            KeyError: If a response names an interrupt that is not registered.
            RuntimeError: If the chain dropped the stop event, or an agent-stream interrupt
                came after the pass produced its stop event.
            SessionConflictError: If another worker saved or holds the session.
            SessionUnfinishedError: If *prompt* is not ``None`` and the session's last
                invocation never finished (see ``_session``); nothing was recorded.
        """
        core = self._core
        before = core.interrupts.to_dict() if core.session is not None else None
        messages = self._take_input(prompt)
        if core.session is not None:
            try:
                new_turn = prompt is not None and parse_interrupt_responses(prompt) is None
                await core.session.claim(core, new_input=messages if new_turn else None)
            except BaseException:
                # Nothing ran: the answers go back to waiting, to be given again.
                assert before is not None
                core.interrupts = InterruptState.from_dict(before)
                raise
        watch = CancelWatch(core.cancel)
        pass_state = PassState(
            input=messages,
            cancel_watch=watch,
            max_model_calls=core.max_model_calls,
            trace=self._trace,
            takeover=core.session is not None and core.session.unfinished,
            output=self._output,
        )
        core.current_pass = pass_state
        stop: EventLoopStopEvent | None = None
        result: AgentResult[Any] | None = None
        failure: BaseException | None = None
        # Listening from the first hook to the last, so a stuck BeforeInvocationEvent or
        # AfterInvocationEvent hook is cut like any other part of the run.
        with watch.watching():
            try:
                with CutRegion(watch, GRACE_SECONDS):
                    # Cut, the run goes on with the signal set: the pass records its input and
                    # ends "cancelled" before calling the model.
                    await core.hooks.fire(
                        BeforeInvocationEvent(
                            agent=core.handle, invocation_state=invocation_state, messages=messages
                        )
                    )
                context = AgentStreamContext.from_host(
                    agent=core.handle,
                    messages=messages,
                    invocation_state=invocation_state,
                    interrupts=core.interrupts.pass_snapshot(),
                )
                self._loop.begin(pass_state)
                region = CutRegion(watch, PASS_CUTOFF_SECONDS)
                chain = (
                    core.registry.invoke(AgentStreamStage, context, self._loop.run)
                    if self._trace is None
                    else self._trace.agent_pass(context, self._loop.run)
                )
                events = region.guard(chain)
                try:
                    async for event in events:
                        if isinstance(event, EventLoopStopEvent):
                            stop = event
                        yield event
                except InterruptException as raised:
                    stop = self._interrupted(raised.interrupt, pass_state, invocation_state)
                    yield stop
                except HaltRun as halted:
                    stop = self._halted(halted.halt, pass_state, invocation_state)
                    yield stop
                finally:
                    await events.aclose()
                if stop is None and region.cut:
                    # The partial model turn, if any, never entered the history.
                    stop = build_stop_event(
                        "cancelled", empty_assistant_message(), invocation_state, pass_state
                    )
                    yield stop
                if stop is None:
                    raise RuntimeError(
                        "the AgentStreamStage chain finished without yielding an "
                        "EventLoopStopEvent; a Wrap handler must yield the stop event its next_fn "
                        "produced (it may yield more events after it)"
                    )
                pass_state.metrics.latency_ms = round(
                    (time.monotonic() - pass_state.started) * 1000
                )
                output = self._output
                result = AgentResult(
                    stop_reason=stop.stop_reason,
                    message=stop.message,
                    interrupts=list(stop.interrupts or ()),
                    metrics=pass_state.metrics,
                    state=stop.request_state,
                    structured_output=self._checked_output(stop),
                    decisions=pass_state.decisions,
                    halt=pass_state.halt,
                    error=pass_state.error,
                    output_type=None if output is None else output.output_type,
                )
            except BaseException as error:
                failure = error
                raise
            finally:
                # However the invocation ended (its stop event, an error, the caller closing the
                # stream or cancelling), the interrupt state is settled, the session stores
                # what is in memory and the hooks hear of it; shielded, so a cancelled run
                # still gets there, and the hooks fire even if saving fails.
                self._settle_interrupts(stop, halted=pass_state.halt is not None)
                with anyio.CancelScope(shield=True):
                    try:
                        if core.session is not None:
                            await core.session.release(core, stop=stop, failure=failure)
                    finally:
                        # The shield keeps out cancellation from outside, not this cut.
                        with CutRegion(watch, GRACE_SECONDS):
                            await core.hooks.fire(
                                AfterInvocationEvent(
                                    agent=core.handle,
                                    invocation_state=invocation_state,
                                    result=result,
                                )
                            )
        assert result is not None  # the try block either set it or raised
        yield AgentResultEvent(result=result)

    def _take_input(self, prompt: object) -> Messages:
        """Store a resume's answers, or turn a prompt into this pass's input messages.

        A resume's input is the input an agent-stream gate held back, if any: the gate
        stopped its pass before the input entered the history.
        """
        interrupts = self._core.interrupts
        responses = parse_interrupt_responses(prompt)
        if interrupts.activated and (responses is not None or prompt is None):
            self._check_resumed_output()
        if responses is not None:
            interrupts.resume(responses, self._core.answer_checks)
            # What still waits past its deadline is settled as it declared (a timeout).
            interrupts.lapse(self._core.answer_checks)
            return interrupts.pending_input
        if interrupts.activated and prompt is None:
            interrupts.lapse(self._core.answer_checks)
        if not interrupts.activated:
            # With no prompt, the input a claim saved and its worker never got to join to
            # the history (see stream()); none otherwise.
            return interrupts.pending_input if prompt is None else prompt_messages(prompt)
        waiting = interrupts.pending()
        if not waiting and prompt is None:
            # Every answer is in (an earlier resume was cut short): continue the cycle.
            return interrupts.pending_input
        if not waiting:
            session = self._core.session
            if session is not None and session.unfinished:
                # A worker died running that resume: the claim refuses the prompt as it
                # refuses any prompt to an unfinished session (SessionUnfinishedError, or
                # SessionLeasedError while the dead worker's lease is live), so a client's
                # retry continues the run with agent().
                return prompt_messages(prompt)
            raise TypeError(
                "the agent stopped on an interrupt whose answers are all in, but the run that "
                "used them did not finish; call the agent with no prompt to continue it"
            )
        names = ", ".join(f"{i.name!r} ({i.id})" for i in waiting)
        raise TypeError(
            "the agent stopped on an interrupt and must be resumed with "
            "[{'interruptResponse': {'interruptId': ..., 'response': ...}}]; "
            f"waiting for: {names}"
        )

    def _check_resumed_output(self) -> None:
        """Refuse a resume that asks for another output than the interrupted run did.

        Raises:
            TypeError: Naming what the interrupted run asked for.
        """
        stored = self._core.interrupts.output
        wanted = None if self._output is None else self._output.fingerprint
        if stored == wanted:
            return
        if stored is None:
            asked = "no output_type"
        else:
            asked = f"output_type {stored.partition(':')[0]} (schema {stored})"
        given = "none" if wanted is None else f"{wanted.partition(':')[0]} (schema {wanted})"
        raise TypeError(
            f"the interrupted run asked for {asked}, and this resume asks for {given}; resume "
            "it with the same output_type, so that it returns the output its caller expects"
        )

    def _checked_output(self, stop: EventLoopStopEvent) -> object:
        """The stop event's output, validated again; ``None`` for a plain run.

        Raises:
            StructuredOutputError: If AgentStream middleware put an output on the stop
                event that does not validate.
        """
        output = self._output
        if output is None or stop.structured_output is None:
            return None
        from pydantic import ValidationError

        try:
            return output.schema.validate(stop.structured_output)
        except ValidationError as error:
            raise StructuredOutputError(
                f"the stop event's structured_output is not a valid {output.schema.name} (an "
                f"AgentStream handler replaced it?): {error}",
                last_reply=stop.message,
                errors=error.errors(include_url=False),
            ) from error

    def _settle_interrupts(self, stop: EventLoopStopEvent | None, *, halted: bool) -> None:
        """End the interrupt cycle unless a resume is still owed.

        A resume is owed when the pass stopped on an interrupt, or when a tool round is
        stored for replay (a cancelled or failed resume). Otherwise the cycle is over, or
        was abandoned: every answer is released, so none outlives it. A halted pass owes
        nothing: what a policy blocked must not run on a later call, so a stored round
        is dropped too (the next input's join answers its calls with error results).
        """
        interrupts = self._core.interrupts
        owed = stop is not None and stop.stop_reason == "interrupt"
        if halted or (not owed and interrupts.pending_tool_execution is None):
            interrupts.end_interrupt_cycle()
        elif owed:
            # What the resume must ask for again (see _check_resumed_output).
            interrupts.output = None if self._output is None else self._output.fingerprint

    def _halted(
        self, halt: Halt, pass_state: PassState, invocation_state: dict[str, Any]
    ) -> EventLoopStopEvent:
        """End the pass that AgentStream middleware halted, leaving the history valid.

        Halted on the way in (before the input entered the history), the history is left
        as it was: a blocked input is not recorded, and the halt's message is only the
        result's. Halted on the way out, the pass's final message, already in the history,
        is replaced by the halt's message, so what was blocked does not stay there.
        """
        pass_state.halt = halt
        history = self._core.messages
        last = pass_state.last_stop
        if (
            last is not None
            and history
            and history[-1] is last.message
            and last.message["role"] == "assistant"
        ):
            history[-1] = halt.message
        elif pass_state.input_appended and history and history[-1]["role"] == "user":
            history.append(halt.message)
        return build_stop_event(halt.stop_reason, halt.message, invocation_state, pass_state)

    def _interrupted(
        self, interrupt: Interrupt, pass_state: PassState, invocation_state: dict[str, Any]
    ) -> EventLoopStopEvent:
        """Register an agent-stream interrupt and build the stop event that reports it."""
        interrupts = self._core.interrupts
        last = pass_state.last_stop
        # The terminal's only "interrupt" stop is a tool round's, which a resume replays.
        if last is not None and last.stop_reason != "interrupt":
            # The model turn is already in the history and nothing was stored to replay:
            # resuming would call the model again. Refuse rather than corrupt the history.
            interrupts.end_interrupt_cycle()
            raise RuntimeError(
                f"interrupt {interrupt.name!r} ({interrupt.id}) was raised after the agent "
                "pass produced its EventLoopStopEvent, so a resume would call the model a "
                "second time. Gate the pass before it produces its model turn: interrupt in "
                "an AgentStreamStage Input or Wrap handler before calling next_fn, not in an "
                "Output handler."
            )
        interrupts.register(interrupt, agent_stream=True)
        interrupts.activate()
        if not pass_state.input_appended:
            # A gate in front of the terminal: the input waits for the resume.
            interrupts.pending_input = pass_state.input
        history = self._core.messages
        # As in Strands 1.62: the last message of the history, whoever wrote it.
        message = history[-1] if history else _interrupted_message()
        return build_stop_event(
            "interrupt", message, invocation_state, pass_state, interrupts.pending()
        )


def _interrupted_message() -> Message:
    """The message of an agent-stream interrupt when the history is still empty."""
    return {"role": "assistant", "content": [{"text": "Interrupted"}]}
