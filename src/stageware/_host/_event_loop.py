"""One agent pass: model turns and tool rounds until the model stops. The AgentStream terminal.

A pass first appends its input, the messages of the context the terminal receives, to the
history (as in Strands 1.62: a replaced input is what the history gets). Then it
alternates model calls and tool rounds, starting with the tool round an interrupt
halted, when there is one, so a resume replays the tools without asking the model again.
It ends with exactly one ``EventLoopStopEvent``: the model's own stop, an ``interrupt``
(tools are waiting for a human), or ``cancelled``.

Before the input is appended, tool calls an earlier invocation left without results
(it failed, was cancelled from outside or was closed by its consumer in the middle of a
tool round) get error results, so the history stays one a provider accepts.
"""

from __future__ import annotations

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
from stageware._generated.payloads import ContentBlock, Message, Messages, StopReason, ToolUse
from stageware._runtime import Interrupt

from ._core import AgentCore, PassState
from ._interrupt_state import PendingToolExecution
from ._model_call import ModelCall
from ._tool_executor import ToolExecutor, ToolRound
from .tools import error_result

__all__ = ["EventLoop", "build_stop_event", "empty_assistant_message"]


def empty_assistant_message() -> Message:
    """The message of a pass that stopped before the model produced one."""
    return {"role": "assistant", "content": []}


def build_stop_event(
    stop_reason: StopReason,
    message: Message,
    invocation_state: dict[str, Any],
    pass_state: PassState,
    interrupts: list[Interrupt] | None = None,
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
        while True:
            pending = core.interrupts.pending_tool_execution
            if pending is not None:
                message = pending.tool_use_message
            else:
                if core.cancel.is_set():
                    yield self.stop("cancelled", empty_assistant_message(), invocation_state)
                    return
                self._pass.metrics.cycles += 1
                result: ModelStopReason | None = None
                # Every nested stream is closed here, in this task, if the pass is closed
                # early: left to the garbage collector, it would be finalised in another
                # task, outside the cancel scopes it opened.
                async with aclosing(self._model_call.run(self._pass, invocation_state)) as call:
                    async for event in call:
                        # The stop reason is the model call's result, not a pass event.
                        if isinstance(event, ModelStopReason):
                            result = event
                        else:
                            yield event
                if result is None or core.cancel.is_set():
                    # Cancelled mid-stream: the partial turn never enters the history.
                    yield self.stop("cancelled", empty_assistant_message(), invocation_state)
                    return
                message = result.message
                await core.append_message(message)
                yield ModelMessageEvent(message=message)
                if result.stop_reason != "tool_use":
                    yield self.stop(result.stop_reason, message, invocation_state)
                    return
            stopped = False
            async with aclosing(self._tool_round(message, pending, invocation_state)) as round_:
                async for round_event in round_:
                    stopped = isinstance(round_event, EventLoopStopEvent)
                    yield round_event
            if stopped:
                return

    async def _tool_round(
        self,
        message: Message,
        pending: PendingToolExecution | None,
        invocation_state: dict[str, Any],
    ) -> AsyncGenerator[AgentStreamEvent, None]:
        """Run the tool calls of *message*; end with a stop event unless the loop goes on."""
        core = self._core
        tool_uses = _tool_uses(message)
        round_ = ToolRound(results={} if pending is None else dict(pending.completed))
        if pending is not None and core.cancel.is_set():
            # A cancelled resume runs nothing and keeps the stored round and the human's
            # answers, so the caller can still resume the interrupt later.
            yield self.stop("cancelled", message, invocation_state)
            return
        tools = self._executor.run(tool_uses, round_, self._pass, invocation_state)
        async with aclosing(tools):
            async for event in tools:
                yield event
        if round_.interrupts:
            core.interrupts.pending_tool_execution = PendingToolExecution(
                tool_use_message=message, completed=dict(round_.results)
            )
            core.interrupts.activate()
            yield self.stop("interrupt", message, invocation_state, core.interrupts.pending())
            return
        if round_.skipped and pending is not None:
            # Cancelled part-way through a resumed round: remember what did run, so a later
            # resume does not run it twice.
            pending.completed = dict(round_.results)
            yield self.stop("cancelled", message, invocation_state)
            return
        results = {**round_.results, **round_.skipped}
        reply: Message = {
            "role": "user",
            "content": [{"toolResult": results[use["toolUseId"]]} for use in tool_uses],
        }
        await core.append_message(reply)
        # The cycle is over once its results are in the history, whether or not the
        # consumer ever pulls the next event.
        core.interrupts.end_tool_cycle()
        yield ToolResultMessageEvent(message=reply)
        if core.cancel.is_set():
            yield self.stop("cancelled", reply, invocation_state)

    def stop(
        self,
        stop_reason: StopReason,
        message: Message,
        invocation_state: dict[str, Any],
        interrupts: list[Interrupt] | None = None,
    ) -> EventLoopStopEvent:
        """Build the pass's stop event and note that the pass has produced it."""
        event = build_stop_event(stop_reason, message, invocation_state, self._pass, interrupts)
        self._pass.last_stop = event
        return event

    async def _append_input(self, messages: Messages) -> None:
        """Append the pass's input to the history, each message with its MessageAddedEvent.

        Results for tool calls an earlier invocation left unanswered lead the input's first
        user message (so user turns keep alternating with assistant turns), or form a user
        message of their own. A round an interrupt stored for replay is not unfinished: the
        resume runs it.
        """
        core = self._core
        self._pass.input_appended = True
        core.interrupts.pending_input = []
        messages = list(messages)
        results = self._unfinished_tool_results()
        if results and messages and messages[0]["role"] == "user":
            first = messages[0]
            # A new message: the context's own dict may be a middleware's constant.
            messages[0] = {**first, "content": [*results, *first["content"]]}
        elif results:
            messages.insert(0, {"role": "user", "content": results})
        for message in messages:
            await core.append_message(message)

    def _unfinished_tool_results(self) -> list[ContentBlock]:
        core = self._core
        if not core.messages or core.interrupts.pending_tool_execution is not None:
            return []
        last = core.messages[-1]
        if last["role"] != "assistant":
            return []
        return [
            {
                "toolResult": error_result(
                    block["toolUse"]["toolUseId"],
                    "The tool call did not finish: the run ended before it produced a result.",
                )
            }
            for block in last["content"]
            if "toolUse" in block
        ]


def _tool_uses(message: Message) -> list[ToolUse]:
    uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
    if not uses:
        raise RuntimeError(
            "the model stopped with stop_reason 'tool_use' but its message has no toolUse "
            "block; the model (or an Output handler) produced an inconsistent result"
        )
    return uses
