"""Running one round of tool calls: hooks, the ExecuteTool chain, interrupts, concurrency.

Every call the model asked for runs concurrently, each as:

```text
BeforeToolCallEvent hooks -> ExecuteTool chain -> AfterToolCallEvent hooks
```

and the whole sequence repeats when an after-hook sets ``retry``, so middleware sees
every attempt. The executor is the single place where tool-cycle interrupts are
registered: a middleware's ``InterruptException``, a tool's ``ToolInterruptEvent`` and a
before-hook's interrupt all end here, and each halted call surfaces as exactly one
``ToolInterruptEvent``.

Nothing in the ExecuteTool chain ends the run (as in Strands 1.62): whatever fails in it
(a middleware raising in any phase, a chain that yields no ``ToolResultEvent``, a tool
that raises or yields no result) becomes an error result the model reads, ``"Error:
<message>"``, logged here, with the exception on ``AfterToolCallEvent`` so a hook can
retry. ``InterruptException`` and cancellation pass through. The hooks around the chain
are not part of it: a failing hook fails the run.

Each call yields exactly one ``ToolResultEvent`` to the agent stream: the result left
after the Output handlers and the ``AfterToolCallEvent`` hooks, which is the one the
model receives. The chain's own result events (and those of attempts a hook or a
middleware retried) are held back; everything else the chain yields streams live.

The chain's terminal runs the tool with the executor's own cancel signal and produces
the "unknown tool" result when the model asked for a tool the agent does not have (the
chain still runs, with ``tool=None``, so middleware can observe or mock it).

After ``cancel()``, calls that have not started get a cancelled result without running.
A call still running ``GRACE_SECONDS`` later (a tool, a middleware or a hook that did not
stop) is cut: its task is cancelled, or, for a sync tool, its worker thread abandoned,
and it gets a cancelled result too, without ``AfterToolCallEvent``. Whatever the call
would have produced afterwards goes nowhere. The round then ends as usual.

In a durable run (a journal is current, see ``_journal``) each tool's own ``stream`` is a
journal step, and only that: the hooks, the middleware and the policies around it run
again on a replay, exactly as without a journal, and are handed the recorded outcome
where the tool ran. The round draws one place per call, in the order of the toolUse
blocks, before any call starts, so that calls finishing in another order on the replay
still get their own records; an attempt after the first (a hook's or a policy's retry, a
middleware calling ``next_fn`` again) draws its place when it reaches the tool, under a
name that carries the call's id (``tool:<name>:retry:<toolUseId>``), so that a replay
whose concurrent retries come in another order stops at the journal's name check
instead of handing a call another's result. The step records the events the tool
yielded (their JSON data), its result (with the description of an exception it carries)
and an interrupt it raised, which a replay raises again and the executor registers as it
did. A ``ToolStreamEvent`` whose data is not JSON (an agent-as-tool's own events) is
streamed on the first run and not recorded: a replay, which nobody watched the first
time, does not repeat that progress. Calls are not recorded that never reach the tool:
an unknown tool, a call a hook cancelled, a result a middleware gave itself.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from stageware._generated.contexts import ExecuteToolContext
from stageware._generated.events import (
    AgentStreamEvent,
    ExecuteToolEvent,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolStreamEvent,
)
from stageware._generated.payloads import ToolResult, ToolUse
from stageware._generated.stages import ExecuteToolStage
from stageware._runtime import (
    CallInterrupts,
    Interrupt,
    InterruptException,
    call_interrupts,
    close_all,
)

from ._cancel_watch import GRACE_SECONDS, CutRegion
from ._core import AgentCore, PassState
from ._halt import Halt, HaltRun, RedoStep, RefuseCall
from ._hook_events import AfterToolCallEvent, BeforeToolCallEvent
from ._journal import StepJournal, current_journal, journal_broken
from ._journal_data import (
    describe_error,
    describe_interrupt,
    is_json,
    read_interrupt,
    rebuild_error,
)
from ._journal_step import LiveStep
from .tools import AgentTool, ToolContext, error_result, exception_result, invalid_result_reason

__all__ = ["ToolExecutor", "ToolRound"]

logger = logging.getLogger(__name__)


@final
@dataclass(eq=False)
class ToolRound:
    """What a round of tool calls produced, filled in while it runs.

    Attributes:
        results: Results of the calls that ran to the end, by toolUseId.
        skipped: Results of calls the cancellation stopped: never run, or cut while
            running.
        interrupts: Interrupts raised by this round (already registered).
        errors: Exceptions that failed the round (from a hook, or the host itself).
    """

    results: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])
    skipped: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])
    interrupts: list[Interrupt] = field(default_factory=list[Interrupt])
    errors: list[Exception] = field(default_factory=list[Exception])
    _scopes: list[anyio.CancelScope] = field(default_factory=list[anyio.CancelScope])

    def fail(self, error: Exception) -> None:
        """Record *error* and cancel every call of the round."""
        self.errors.append(error)
        # Each call's own scope, not the task group's: that one is also on the stack of
        # the task consuming the round, which would be cancelled instead of seeing the
        # error.
        for scope in self._scopes:
            scope.cancel()

    def add_scope(self, scope: anyio.CancelScope) -> None:
        """Register a call's cancel scope; cancelled at once if the round already failed."""
        self._scopes.append(scope)
        if self.errors:
            scope.cancel()


@final
class _Places:
    """The journal places of one tool call: the one its round drew, then one per attempt."""

    __slots__ = ("_drawn", "_first", "_journal", "_retry_name")

    def __init__(self, journal: StepJournal, tool_use: ToolUse) -> None:
        self._journal = journal
        self._first = journal.reserve(f"tool:{tool_use['name']}")
        self._drawn = False
        self._retry_name = f"tool:{tool_use['name']}:retry:{tool_use['toolUseId']}"

    def take(self) -> object:
        """The place of the attempt now reaching the tool."""
        if not self._drawn:
            self._drawn = True
            return self._first
        return self._journal.reserve(self._retry_name)


# The places of the tool call the current task runs (each call has a task of its own).
_call_places: ContextVar[_Places | None] = ContextVar("stageware_tool_places", default=None)


@final
@dataclass(frozen=True, eq=False)
class _Call:
    """One tool call of a round, with what its task needs from the round."""

    tool_use: ToolUse
    round_: ToolRound
    pass_state: PassState
    invocation_state: dict[str, Any]
    places: _Places | None


@final
class ToolExecutor:
    """Runs the tool calls of one assistant message through hooks and the ExecuteTool stage."""

    __slots__ = ("_core",)

    def __init__(self, core: AgentCore) -> None:
        self._core = core

    async def run(
        self,
        tool_uses: list[ToolUse],
        round_: ToolRound,
        pass_state: PassState,
        invocation_state: dict[str, Any],
    ) -> AsyncGenerator[AgentStreamEvent, None]:
        """Run *tool_uses* concurrently, yielding their events as they happen.

        Calls whose id is already in ``round_.results`` (finished before an interrupt) are
        not run again.

        Raises:
            Exception: The first error a hook or the host raised; the other calls are
                cancelled.
        """
        calls = [use for use in tool_uses if use["toolUseId"] not in round_.results]
        journal = current_journal()
        # All drawn before any call starts, in the order of the calls (see the module).
        places = [None if journal is None else _Places(journal, use) for use in calls]
        send, receive = anyio.create_memory_object_stream[AgentStreamEvent](math.inf)
        async with anyio.create_task_group() as group:
            for tool_use, call_places in zip(calls, places, strict=True):
                call = _Call(tool_use, round_, pass_state, invocation_state, call_places)
                group.start_soon(self._run_call, call, send.clone())
            send.close()
            async with receive:
                async for event in receive:
                    try:
                        yield event
                    except GeneratorExit:
                        # The consumer closed the stream: cancel the calls and leave the task
                        # group normally, so its cancel scope closes here, in this task,
                        # instead of a GeneratorExit escaping through it.
                        group.cancel_scope.cancel()
                        return
        if round_.errors:
            raise round_.errors[0]

    async def _run_call(self, call: _Call, send: MemoryObjectSendStream[AgentStreamEvent]) -> None:
        _call_places.set(call.places)
        async with send:
            round_ = call.round_
            with CutRegion(call.pass_state.cancel_watch, GRACE_SECONDS) as region:
                round_.add_scope(region.scope)
                running = self._call(
                    call.tool_use, round_, call.pass_state, call.invocation_state, send
                )
                trace = call.pass_state.trace
                try:
                    if trace is None:
                        await running
                    else:
                        await trace.tool_call(call.tool_use, round_, running)
                except Exception as error:
                    # Kept for run() to re-raise as itself (a task group would wrap it in
                    # an exception group); the other calls are cancelled, not waited for.
                    round_.fail(error)
            tool_use_id = call.tool_use["toolUseId"]
            if region.cut and not round_.errors and tool_use_id not in round_.results:
                cut = error_result(
                    tool_use_id,
                    "The tool call was cancelled: it was still running when the run was cancelled.",
                )
                round_.skipped[tool_use_id] = cut
                # Without a checkpoint: nothing may stop the call's one result now.
                send.send_nowait(ToolResultEvent(tool_result=cut))

    async def _call(
        self,
        tool_use: ToolUse,
        round_: ToolRound,
        pass_state: PassState,
        invocation_state: dict[str, Any],
        send: MemoryObjectSendStream[AgentStreamEvent],
    ) -> None:
        core = self._core
        tool_use_id = tool_use["toolUseId"]
        while True:
            if core.cancel.is_set():
                skipped = error_result(tool_use_id, "The tool call was cancelled before it ran.")
                round_.skipped[tool_use_id] = skipped
                await send.send(ToolResultEvent(tool_result=skipped))
                return
            asked = CallInterrupts(core.interrupts.answered())
            before = BeforeToolCallEvent(
                agent=core.handle,
                selected_tool=core.tools.get(tool_use["name"]),
                tool_use=tool_use,
                invocation_state=invocation_state,
                _interrupts=asked,
            )
            try:
                await core.hooks.fire(before)
            except InterruptException as raised:
                await self._halt(tool_use, [raised.interrupt], round_, send)
                return
            except Exception:
                if asked.raised is None:
                    raise
                # The hook caught its interrupt and failed otherwise: a human still decides.
            if asked.raised is not None:
                swallowed = asked.swallowed("a BeforeToolCallEvent hook")
                await self._halt(tool_use, [swallowed.interrupt], round_, send)
                return
            if before.cancel_tool is not False:
                await self._cancel(before, round_, send)
                return
            result, interrupts, halt = await self._run_chain(before, pass_state, send)
            if interrupts:
                self._register(interrupts, round_)
                return
            if result is None:  # a policy Retry: the whole call again, hooks included
                continue
            after = await core.hooks.fire(
                AfterToolCallEvent(
                    agent=core.handle,
                    selected_tool=before.selected_tool,
                    tool_use=before.tool_use,
                    invocation_state=invocation_state,
                    result=_for_call(result.tool_result, tool_use_id),
                    exception=result.exception,
                )
            )
            if not after.retry:
                # A halt counts once the call's result is final: a hook's retry of a
                # blocked call that then runs leaves the run going.
                if halt is not None and pass_state.halt is None:
                    pass_state.halt = halt
                final = _for_call(after.result, tool_use_id)
                round_.results[tool_use_id] = final
                # Shielded: a cancel cut must not come between the result and its record
                # (which keeps a finished tool from running twice) or its one event.
                with anyio.CancelScope(shield=True):
                    await self._record_result(tool_use_id, final)
                if final is not result.tool_result:
                    result = ToolResultEvent(tool_result=final, exception=result.exception)
                send.send_nowait(result)
                return

    async def _record_result(self, tool_use_id: str, result: ToolResult) -> None:
        """Save a finished call before anything else happens.

        The round being run is stored in the session (with its model turn, or by the
        interrupt a resume answered); once the call's result is in it, a worker that
        takes over after this one died replays the round with the result instead of
        running the call a second time. Concurrent calls each save their own.
        """
        core = self._core
        pending = core.interrupts.pending_tool_execution
        if pending is None or core.session is None:
            return
        pending.completed[tool_use_id] = result
        await core.session.checkpoint(core)

    async def _run_chain(
        self,
        before: BeforeToolCallEvent,
        pass_state: PassState,
        send: MemoryObjectSendStream[AgentStreamEvent],
    ) -> tuple[ToolResultEvent | None, list[Interrupt], Halt | None]:
        """Run the chain once: its result (held back, not sent), or the interrupts that halted it.

        Neither, when a policy asked for the call to be redone (``RedoStep``). With a
        ``HaltRun``, its halt, for the run to end once the call's result is final. A
        ``RefuseCall`` is the attempt's error result.

        Whatever the chain raises, other than an interrupt or a cancellation, becomes the
        error result of the attempt.
        """
        core = self._core
        context = ExecuteToolContext.from_host(
            agent=core.handle,
            tool=before.selected_tool,
            tool_use=before.tool_use,
            invocation_state=before.invocation_state,
            cancel_signal=core.cancel,
            interrupts=core.interrupts.answered(),
        )
        pass_state.metrics.tool_calls += 1
        result: ToolResultEvent | None = None
        interrupts: list[Interrupt] = []
        halt: Halt | None = None
        registry = core.registry if pass_state.trace is None else pass_state.trace.registry
        events = registry.invoke(ExecuteToolStage, context, self._terminal)
        try:
            async for event in events:
                if isinstance(event, ToolResultEvent):
                    # The last one is the attempt's result; _call sends the final one.
                    result = event
                    continue
                if isinstance(event, ToolInterruptEvent):
                    interrupts.extend(event.interrupts)
                await send.send(event)
        except InterruptException as raised:
            interrupts.append(raised.interrupt)
            await send.send(
                ToolInterruptEvent(tool_use=before.tool_use, interrupts=[raised.interrupt])
            )
        except HaltRun as halted:
            # The call gets an error result; the round finishes and the loop ends the run.
            halt = halted.halt
            result = ToolResultEvent(
                tool_result=error_result(
                    before.tool_use["toolUseId"],
                    f"The tool call was stopped by policy ({halted.halt.stop_reason}).",
                )
            )
        except RefuseCall as refused:
            # The tool never ran: the model reads why, and the run goes on.
            result = ToolResultEvent(
                tool_result=error_result(before.tool_use["toolUseId"], refused.message)
            )
        except RedoStep:
            result = None
        except Exception as error:
            if journal_broken():
                raise  # the durable run cannot go on: no result is made of it (_journal)
            result = _failed(before.tool_use, error, "the ExecuteTool chain raised")
        finally:
            await events.aclose()
        return result, interrupts, halt

    async def _halt(
        self,
        tool_use: ToolUse,
        interrupts: list[Interrupt],
        round_: ToolRound,
        send: MemoryObjectSendStream[AgentStreamEvent],
    ) -> None:
        self._register(interrupts, round_)
        await send.send(ToolInterruptEvent(tool_use=tool_use, interrupts=interrupts))

    def _register(self, interrupts: list[Interrupt], round_: ToolRound) -> None:
        for interrupt in interrupts:
            self._core.interrupts.register(interrupt)
        round_.interrupts.extend(interrupts)

    async def _cancel(
        self,
        before: BeforeToolCallEvent,
        round_: ToolRound,
        send: MemoryObjectSendStream[AgentStreamEvent],
    ) -> None:
        tool_use_id = before.tool_use["toolUseId"]
        message = (
            before.cancel_tool
            if isinstance(before.cancel_tool, str)
            else "The tool call was cancelled by a hook."
        )
        after = await self._core.hooks.fire(
            AfterToolCallEvent(
                agent=self._core.handle,
                selected_tool=before.selected_tool,
                tool_use=before.tool_use,
                invocation_state=before.invocation_state,
                result=error_result(tool_use_id, message),
                cancel_message=message,
            )
        )
        final = _for_call(after.result, tool_use_id)
        round_.results[tool_use_id] = final
        send.send_nowait(ToolResultEvent(tool_result=final))

    async def _terminal(self, context: ExecuteToolContext) -> AsyncIterator[ExecuteToolEvent]:
        core = self._core
        core.check_agent(context)
        if context.cancel_signal is not core.cancel:
            raise RuntimeError(
                "ExecuteToolContext.cancel_signal was replaced (with dataclasses.replace); the "
                "executor owns the signal and the tool always receives the executor's own, so "
                "the replacement would be ignored. Observe the signal instead of replacing it."
            )
        tool_use = context.tool_use
        if context.tool is None:
            yield ToolResultEvent(
                tool_result=error_result(
                    tool_use["toolUseId"], f"Unknown tool: {tool_use['name']!r}."
                )
            )
            return
        journal = current_journal()
        if journal is None:
            events = self._run_tool(context, context.tool)
        else:
            places = _call_places.get()
            place = journal.reserve(f"tool:{tool_use['name']}") if places is None else places.take()
            events = self._journaled(journal, place, context, context.tool)
        try:
            async for event in events:
                yield event
        except InterruptException as raised:
            _record_in_call(context, raised)
            raise
        finally:
            # Closed here, in this task, not whenever the garbage collector gets to it.
            await close_all([events])

    async def _run_tool(
        self, context: ExecuteToolContext, tool: AgentTool
    ) -> AsyncGenerator[ExecuteToolEvent, None]:
        """The tool's own stream, with what it failed to say made into its result.

        Raises:
            InterruptException: The tool's interrupt (also one it caught and went on
                from); the terminal records it as the call's.
        """
        core = self._core
        tool_use = context.tool_use
        asked = CallInterrupts(core.interrupts.answered())
        tool_context = ToolContext(
            agent=core.handle,
            tool_use=tool_use,
            invocation_state=context.invocation_state,
            cancel_signal=core.cancel,
            interrupts=asked,
        )
        events = tool.stream(tool_use, tool_context)
        answered = halted = False
        try:
            async for event in events:
                halted = halted or isinstance(event, ToolInterruptEvent)
                if asked.raised is not None and not halted:
                    # The tool caught its own interrupt and went on (reporting it as a
                    # ToolInterruptEvent is not going on): nothing it does after that
                    # reaches the chain, and the run still stops for the human.
                    raise asked.swallowed(f"the tool {tool_use['name']!r}")
                answered = answered or isinstance(event, ToolResultEvent | ToolInterruptEvent)
                yield event
        except InterruptException:
            raise
        except Exception as error:
            if asked.raised is not None and not halted:
                raise asked.swallowed(f"the tool {tool_use['name']!r}") from None
            # Middleware always observes a result, not a raised exception.
            yield _failed(tool_use, error, "the tool raised")
            return
        finally:
            # Closed here, in this task, not whenever the garbage collector gets to it.
            await close_all([events])
        if asked.raised is not None and not halted:
            raise asked.swallowed(f"the tool {tool_use['name']!r}")
        if not answered:
            # A result, so middleware observes one and the model learns the call failed.
            silent = RuntimeError(f"the tool {tool_use['name']!r} finished without a result")
            logger.error("tool call %s: %s", tool_use["toolUseId"], silent)
            yield ToolResultEvent(
                tool_result=exception_result(tool_use["toolUseId"], silent), exception=silent
            )

    async def _journaled(
        self, journal: StepJournal, place: object, context: ExecuteToolContext, tool: AgentTool
    ) -> AsyncGenerator[ExecuteToolEvent, None]:
        """The tool's stream as one journal step: live on a first run, recorded on a replay.

        Raises:
            InterruptException: The interrupt the tool raised (recorded, on a replay).
            Exception: What the host raised around the tool: the exception itself on a
                first run, one rebuilt from its record on a replay.
        """
        raised: list[Exception] = []

        async def body(emit: Callable[[ExecuteToolEvent], None]) -> dict[str, Any]:
            recorded: list[dict[str, Any]] = []
            record: dict[str, Any] = {"events": recorded}
            events = self._run_tool(context, tool)
            try:
                async for event in events:
                    data = _event_record(event)
                    if data is not None:
                        recorded.append(data)
                    emit(event)
            except InterruptException as interrupt:
                raised.append(interrupt)
                record["interrupt"] = describe_interrupt(interrupt.interrupt)
            except Exception as error:
                raised.append(error)
                record["error"] = describe_error(error)
            finally:
                await close_all([events])
            return record

        step = LiveStep[ExecuteToolEvent](journal, place, body)
        async with aclosing(step.stream()) as live:
            async for event in live:
                yield event
        record = step.record
        if not step.ran:
            for data in record["events"]:
                yield _read_event(data)
        if raised:  # the first run's own exception, with its traceback
            raise raised[0]
        if "interrupt" in record:
            raise InterruptException(read_interrupt(record["interrupt"]))
        if "error" in record:
            raise rebuild_error(record["error"])


def _event_record(event: ExecuteToolEvent) -> dict[str, Any] | None:
    """*event* as JSON data for the journal; ``None`` for stream data that is not JSON."""
    if isinstance(event, ToolResultEvent):
        error = event.exception
        return {
            "result": event.tool_result,
            "exception": None if error is None else describe_error(error),
        }
    if isinstance(event, ToolInterruptEvent):
        return {
            "interrupts": [describe_interrupt(i) for i in event.interrupts],
            "tool_use": event.tool_use,
        }
    if not is_json(event.data):
        return None
    return {"stream": event.data, "tool_use": event.tool_use}


def _read_event(data: dict[str, Any]) -> ExecuteToolEvent:
    """The event :func:`_event_record` recorded."""
    if "result" in data:
        error = data["exception"]
        return ToolResultEvent(
            tool_result=data["result"], exception=None if error is None else rebuild_error(error)
        )
    if "interrupts" in data:
        return ToolInterruptEvent(
            tool_use=data["tool_use"], interrupts=[read_interrupt(i) for i in data["interrupts"]]
        )
    return ToolStreamEvent(tool_use=data["tool_use"], data=data["stream"])


def _failed(tool_use: ToolUse, error: Exception, what: str) -> ToolResultEvent:
    """Log *error* (with its traceback) and make it the call's error result for the model."""
    logger.exception(
        "tool call %s (%r): %s; the model receives an error result",
        tool_use["toolUseId"],
        tool_use["name"],
        what,
    )
    return ToolResultEvent(
        tool_result=exception_result(tool_use["toolUseId"], error), exception=error
    )


def _record_in_call(context: ExecuteToolContext, raised: InterruptException) -> InterruptException:
    """Record a tool's interrupt as the call's own, and return it to be raised.

    The tool's interrupt leaves the terminal through the ExecuteTool chain: recorded in the
    record the chain's contexts share, a middleware that catches it on its way out (an
    ``except Exception`` around ``next_fn``) cannot make the call go on without the human.
    """
    record = call_interrupts(context)
    if record is not None and record.raised is None:
        record.raised = raised
    return raised


def _for_call(result: ToolResult, tool_use_id: str) -> ToolResult:
    """*result* answering the call *tool_use_id*, or an error result if it is malformed.

    Results are paired with calls by the executor, not by whatever id a middleware's
    cached or mocked result carries; a result copied from another call must still
    answer this one.
    """
    reason = invalid_result_reason(result)
    if reason is not None:
        return error_result(
            tool_use_id, f"Error: the tool call produced an invalid ToolResult ({reason})."
        )
    if result["toolUseId"] == tool_use_id:
        return result
    return {**result, "toolUseId": tool_use_id}
