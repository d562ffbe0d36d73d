"""One invocation of an agent: the run loop around the AgentStream chain.

In order:

1. A resume stores the human's answers; a prompt becomes the pass's input messages.
2. ``BeforeInvocationEvent`` fires, then each input message is appended to the history
   with its ``MessageAddedEvent``, before the chain runs, so the user turn is recorded
   even when middleware short-circuits the pass.
3. The AgentStream chain runs, with the event loop as its terminal. An
   ``InterruptException`` from AgentStream middleware is registered here (the single
   registration site for agent-stream interrupts) and ends the pass with an ``interrupt``
   stop event, unless the pass had already produced its stop event: then the interrupt
   is refused, because a resume would call the model a second time.
4. The stop event the invocation reports is the last ``EventLoopStopEvent`` the chain
   yielded; a chain that dropped it is an error.
5. However the invocation ends (its stop event, an error, the caller closing the stream),
   an invocation with nothing owed a resume ends the interrupt cycle, releasing every
   answer; then the session is saved and ``AfterInvocationEvent`` fires.

Before the input is appended, tool calls an earlier, interrupted-from-outside invocation
left without results get error results, so the history stays one a provider accepts.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, final

import anyio

from stageware._generated.contexts import AgentStreamContext
from stageware._generated.events import AgentStreamEvent, EventLoopStopEvent
from stageware._generated.payloads import ContentBlock, Message
from stageware._generated.stages import AgentStreamStage
from stageware._runtime import Interrupt, InterruptException

from ._agent_result import AgentResult, AgentResultEvent
from ._core import AgentCore, PassState
from ._event_loop import EventLoop, build_stop_event, empty_assistant_message
from ._hook_events import AfterInvocationEvent, BeforeInvocationEvent
from ._interrupt_state import parse_interrupt_responses
from ._prompt import prompt_messages
from .tools import error_result

__all__ = ["Invocation"]


@final
class Invocation:
    """Runs one ``agent(...)`` call and streams its events, ending with its result."""

    __slots__ = ("_core", "_loop", "_save")

    def __init__(
        self, core: AgentCore, loop: EventLoop, save: Callable[[], Awaitable[None]]
    ) -> None:
        self._core = core
        self._loop = loop
        self._save = save

    async def stream(
        self, prompt: object, invocation_state: dict[str, Any]
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent, None]:
        """Yield the pass's events, then one ``AgentResultEvent``.

        Raises:
            TypeError: If the agent is waiting for interrupt responses and *prompt* is not a
                resume, or *prompt* has an unsupported shape.
            KeyError: If a response names an interrupt that is not registered.
            RuntimeError: If the chain dropped the stop event, or an agent-stream interrupt
                came after the pass produced its stop event.
        """
        core = self._core
        messages = self._take_input(prompt)
        pass_state = PassState(input=messages)
        stop: EventLoopStopEvent | None = None
        result: AgentResult | None = None
        try:
            await core.hooks.fire(
                BeforeInvocationEvent(
                    agent=core.handle, invocation_state=invocation_state, messages=messages
                )
            )
            await self._answer_unfinished_tool_calls(messages)
            for message in messages:
                await core.append_message(message)
            context = AgentStreamContext.from_host(
                agent=core.handle,
                messages=messages,
                invocation_state=invocation_state,
                interrupts=core.interrupts.pass_snapshot(),
            )
            self._loop.begin(pass_state)
            events = core.registry.invoke(AgentStreamStage, context, self._loop.run)
            try:
                async for event in events:
                    if isinstance(event, EventLoopStopEvent):
                        stop = event
                    yield event
            except InterruptException as raised:
                stop = self._interrupted(raised.interrupt, pass_state, invocation_state)
                yield stop
            finally:
                await events.aclose()
            if stop is None:
                raise RuntimeError(
                    "the AgentStreamStage chain finished without yielding an "
                    "EventLoopStopEvent; a Wrap handler must yield the stop event its next_fn "
                    "produced (it may yield more events after it)"
                )
            pass_state.metrics.latency_ms = round((time.monotonic() - pass_state.started) * 1000)
            result = AgentResult(
                stop_reason=stop.stop_reason,
                message=stop.message,
                interrupts=list(stop.interrupts or ()),
                metrics=pass_state.metrics,
                state=stop.request_state,
                structured_output=stop.structured_output,
            )
        finally:
            # However the invocation ended (its stop event, an error, the caller closing the
            # stream or cancelling), the interrupt state is settled, the session stores
            # what is in memory and the hooks hear of it; shielded, so a cancelled run
            # still gets there, and the hooks fire even if saving fails.
            self._settle_interrupts(stop)
            with anyio.CancelScope(shield=True):
                try:
                    await self._save()
                finally:
                    await core.hooks.fire(
                        AfterInvocationEvent(
                            agent=core.handle, invocation_state=invocation_state, result=result
                        )
                    )
        assert result is not None  # the try block either set it or raised
        yield AgentResultEvent(result=result)

    def _take_input(self, prompt: object) -> list[Any]:
        """Store a resume's answers, or turn a prompt into this pass's input messages."""
        interrupts = self._core.interrupts
        responses = parse_interrupt_responses(prompt)
        if responses is not None:
            interrupts.resume(responses)
            return []
        if not interrupts.activated:
            return prompt_messages(prompt)
        waiting = interrupts.pending()
        if not waiting and prompt is None:
            # Every answer is in (an earlier resume was cut short): continue the cycle.
            return []
        if not waiting:
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

    async def _answer_unfinished_tool_calls(self, messages: list[Message]) -> None:
        """Give tool calls an earlier invocation left unanswered an error result.

        An invocation that failed, was cancelled from outside or was closed by its consumer
        in the middle of a tool round leaves an assistant message whose calls have no
        results; every provider rejects such a history. The results lead the next user
        turn (the first of *messages* when that is a user message, so user turns keep
        alternating with assistant turns), or form a user message of their own. A round an
        interrupt stored for replay is not unfinished: the resume runs it.
        """
        core = self._core
        if not core.messages or core.interrupts.pending_tool_execution is not None:
            return
        last = core.messages[-1]
        calls = [block["toolUse"] for block in last["content"] if "toolUse" in block]
        if last["role"] != "assistant" or not calls:
            return
        results: list[ContentBlock] = [
            {
                "toolResult": error_result(
                    call["toolUseId"],
                    "The tool call did not finish: the run ended before it produced a result.",
                )
            }
            for call in calls
        ]
        if messages and messages[0]["role"] == "user":
            messages[0]["content"][:0] = results
        else:
            await core.append_message({"role": "user", "content": results})

    def _settle_interrupts(self, stop: EventLoopStopEvent | None) -> None:
        """End the interrupt cycle unless a resume is still owed.

        A resume is owed when the pass stopped on an interrupt, or when a tool round is
        stored for replay (a cancelled or failed resume). Otherwise the cycle is over, or
        was abandoned: every answer is released, so none outlives it.
        """
        interrupts = self._core.interrupts
        owed = stop is not None and stop.stop_reason == "interrupt"
        if not owed and interrupts.pending_tool_execution is None:
            interrupts.end_interrupt_cycle()

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
        message = last.message if last is not None else empty_assistant_message()
        return build_stop_event(
            "interrupt", message, invocation_state, pass_state, interrupts.pending()
        )
