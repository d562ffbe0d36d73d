"""One model call: the InvokeModel chain, its terminal, and the hooks around it.

The terminal streams ``context.model`` (so middleware can route one call elsewhere) and
ends with the ``ModelStopReason`` it assembled. The loop acts on the last
``ModelStopReason`` the whole chain yields, which is the Output phase's when there is
one: Output is authoritative. Before/after model-call hooks fire outside the chain, so
a call that middleware serves from a cache still has both.

Retries wrap the chain, as in Strands 1.62: a hook's ``retry``, and the agent's
``ModelRetryStrategy`` for a ``ModelThrottledError`` that escapes the chain, both run the
hooks and the whole chain again. So every attempt is visible to hooks and middleware, and
a middleware that handles throttling itself (falling back to another model, say) goes
first: what it catches is never retried here. A policy's ``RedoStep`` runs the chain again
too; the feedback it carries (a ``Guide``) is added to every later attempt's request, as
text blocks at the end of its last user turn, until a response is accepted: the model
reads why its last answer was refused, and the history never keeps it, as it never keeps
the refused answer.

In a structured run the context carries ``structured_output_model``, and the terminal asks
the model it calls for the output (``_structured_output``): natively, or with the output
tool added to the call's tool specs.

Where a handler sees the context, it carries ``projected_input_tokens``, and the terminal
calibrates the next projection against the input tokens the response reports
(``_input_tokens``). A ``ContextWindowOverflowError`` is never retried here (the
throttling strategy takes only ``ModelThrottledError``): after the hooks it ends the pass
(``_event_loop``).

In a durable run (a journal is current, see ``_journal``) the model's stream is one
journal step. The terminal draws the step's place as it starts; the step reads the stream
to its end, handing each chunk on as it arrives, and records the chunks, the error the
stream ended with (``_journal_data``) and the model state if the model changed it. A
replay gets the recorded chunks and state back without calling the model, and the terminal
goes on exactly as it did: the same assembly, the same calibration of the token
projection, the same error raised. Everything around the terminal (hooks, middleware,
retries) runs again on a replay, as it ran the first time; a retried call is a step of its
own. A call its consumer abandons mid-stream (a cancellation, a chunk that does not
assemble) records nothing, and a replay calls the model again.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any, TypeVar, final

from stageware._generated.contexts import InvokeModelContext
from stageware._generated.events import InvokeModelEvent, ModelStopReason, ModelStreamChunkEvent
from stageware._generated.payloads import (
    ContentBlock,
    Message,
    Messages,
    StreamEvent,
    SystemContentBlock,
)
from stageware._generated.stages import InvokeModelStage
from stageware._runtime import InterruptException, close_all

from ._core import AgentCore, PassState
from ._halt import HaltRun, RedoStep
from ._history_copies import HistoryCopies
from ._hook_events import AfterModelCallEvent, BeforeModelCallEvent, ModelStopResponse
from ._input_tokens import InputTokens
from ._journal import StepJournal, current_journal, journal_broken
from ._journal_data import describe_error, rebuild_error
from ._journal_step import LiveStep
from ._model_retry import ThrottleRetries
from ._structured_output import supports_native_output
from ._tool_specs import ToolSpecCopies
from .models import ResponseAssembler, TokenCounter
from .models._streaming import check_tool_use_ids

__all__ = ["ModelCall", "split_system_prompt"]

T = TypeVar("T")


def split_system_prompt(
    system_prompt: str | list[SystemContentBlock] | None,
) -> tuple[str | None, list[SystemContentBlock] | None]:
    """Split the context's one system-prompt field into ``Model.stream``'s two parameters.

    A string is passed both as text and as a single text block; a block list is passed as
    blocks, with its text blocks joined as the text form for providers that only take text.
    """
    if system_prompt is None:
        return None, None
    if isinstance(system_prompt, str):
        return system_prompt, [{"text": system_prompt}]
    texts = [block["text"] for block in system_prompt if "text" in block]
    return ("\n".join(texts) if texts else None), list(system_prompt)


@final
class ModelCall:
    """Runs the InvokeModel stage for one agent, with its hooks and hook-driven retries."""

    __slots__ = ("_copies", "_core", "_spec_copies", "_tokens")

    def __init__(self, core: AgentCore) -> None:
        self._core = core
        self._copies = HistoryCopies()
        self._spec_copies = ToolSpecCopies()
        self._tokens = InputTokens()

    async def run(
        self, pass_state: PassState, invocation_state: dict[str, Any]
    ) -> AsyncGenerator[InvokeModelEvent, None]:
        """Yield the call's events; the last ``ModelStopReason`` is the one to act on.

        Stops early, without a ``ModelStopReason``, when the run is cancelled mid-stream
        or while it waits to retry a throttled call, or before a retry the invocation has
        no model calls left for.

        Raises:
            Exception: What the chain raised, unless an ``AfterModelCallEvent`` hook retried
                or, for throttling, the agent's retry strategy did.
        """
        core = self._core
        throttling = ThrottleRetries(core.retry_strategy)
        attempt = 0
        feedback: list[str] = []
        while True:
            if pass_state.refuse_model_call():  # the loop reports the limit
                return
            attempt += 1
            await core.hooks.fire(
                BeforeModelCallEvent(
                    agent=core.handle, invocation_state=invocation_state, attempt=attempt
                )
            )
            # A tool provider's I/O (an MCP client connecting, or fetching the list its
            # server announced) is awaited here, so reading the tools never blocks the loop.
            await core.tools.refresh()
            if core.cancel.is_set():  # a hook cancelled: do not pay for the request
                return
            context = await self._context(invocation_state, feedback)
            if pass_state.output is not None:
                # Until the terminal says otherwise (middleware may serve the call without
                # it), the reply is read as the agent's model would give it.
                pass_state.output.native = supports_native_output(context.model)
            pass_state.metrics.model_calls += 1
            result: ModelStopReason | None = None
            try:
                events = (
                    core.registry.invoke(InvokeModelStage, context, self._terminal)
                    if pass_state.trace is None
                    else pass_state.trace.model_call(context, self._terminal)
                )
                try:
                    async for event in events:
                        if isinstance(event, ModelStopReason):
                            result = event
                        yield event
                        if core.cancel.is_set():
                            return
                finally:
                    await events.aclose()
                if result is not None:
                    # The message the loop acts on may be an Output handler's, which no
                    # stream assembled: checked here too, before it enters the history.
                    check_tool_use_ids(result.message)
            except (HaltRun, InterruptException):
                # A policy decided: the loop ends the pass, or the run waits for a human.
                raise
            except RedoStep as redo:
                if redo.feedback is not None:
                    feedback.append(redo.feedback)
                continue
            except Exception as error:
                if journal_broken():
                    raise  # the durable run cannot go on: no hook retries it (_journal)
                after = await core.hooks.fire(
                    AfterModelCallEvent(
                        agent=core.handle,
                        invocation_state=invocation_state,
                        exception=error,
                        attempt=attempt,
                    )
                )
                if after.retry:
                    continue
                delay = throttling.delay_after(error)
                if delay is None:
                    raise
                if await core.cancel.wait(delay):
                    return
                continue
            # registry.invoke raised already if the chain yielded no ModelStopReason.
            assert result is not None
            after = await core.hooks.fire(
                AfterModelCallEvent(
                    agent=core.handle,
                    invocation_state=invocation_state,
                    stop_response=ModelStopResponse(
                        stop_reason=result.stop_reason, message=result.message
                    ),
                    attempt=attempt,
                )
            )
            if not after.retry:
                pass_state.metrics.add_usage(result.usage)
                return

    async def _context(
        self, invocation_state: dict[str, Any], feedback: list[str]
    ) -> InvokeModelContext:
        """The call's context, with the copy rules applied where a handler can see it, and
        the *feedback* of the call's earlier attempts added to its request.

        The copies protect the agent's history and tool specs from handlers. Without an
        InvokeModel Input or Wrap handler nothing can change the context, and copying a long
        history or many tools' specs would be most of the call's cost, so the model gets the
        agent's own messages and specs, as in Strands. With one, the copies of both are kept
        from call to call (``HistoryCopies``, ``ToolSpecCopies``), and ``from_host`` copies
        the rest. ``projected_input_tokens`` is filled there too, and only there: nobody
        else can read it.
        """
        core = self._core
        output = core.current_pass.output if core.current_pass is not None else None
        output_type = None if output is None else output.output_type
        if not core.registry.sees_context(InvokeModelStage):
            return InvokeModelContext(
                agent=core.handle,
                messages=_with_feedback(core.messages, feedback) if feedback else core.messages,
                system_prompt=core.system_prompt,
                tool_specs=core.tool_specs.current(),
                tool_choice=core.tool_choice,
                invocation_state=invocation_state,
                model=core.model,
                structured_output_model=output_type,
            )
        context = InvokeModelContext.from_host(
            agent=core.handle,
            # Both copied below, only where the last call's copies are out of date.
            messages=[],
            system_prompt=core.system_prompt,
            tool_specs=[],
            tool_choice=core.tool_choice,
            invocation_state=invocation_state,
            model=core.model,
            structured_output_model=output_type,
        )
        messages = self._copies.copy_of(core.messages)
        if feedback:
            messages = _with_feedback(messages, feedback)
        tool_specs = self._spec_copies.copy_of(core.tool_specs.current())
        text, blocks = split_system_prompt(context.system_prompt)
        projected = await self._tokens.project(core.model, messages, tool_specs, text, blocks)
        return context.replace(
            messages=messages, tool_specs=tool_specs, projected_input_tokens=projected
        )

    async def _terminal(self, context: InvokeModelContext) -> AsyncIterator[InvokeModelEvent]:
        core = self._core
        journal = current_journal()
        # Drawn first, before anything that may await: the places of a replay must come
        # in the same order.
        place = None if journal is None else journal.reserve(f"model:{_model_name(context.model)}")
        core.check_agent(context)
        text, blocks = split_system_prompt(context.system_prompt)
        assembler = ResponseAssembler()
        tool_specs, tool_choice = context.tool_specs, context.tool_choice
        extra: dict[str, Any] = {}
        output = core.current_pass.output if core.current_pass is not None else None
        if output is not None:
            # Asked here, after middleware: only now is the model serving the call known,
            # and with it whether the schema goes natively or as the output tool.
            tool_specs, tool_choice, extra = output.request(context.model, tool_specs, tool_choice)
        # model_state is excluded from the context: the terminal hands the agent's own
        # dict to the model, so whatever the provider writes there is kept for next time.
        # invocation_state is the context's, so a replacement reaches the model too.
        sent: int | None = None
        if core.registry.sees_context(InvokeModelStage) and not isinstance(
            context.model, TokenCounter
        ):
            # Counted before the call: the model reads the request and must leave it as is.
            sent = self._tokens.estimate_sent(context.messages, tool_specs, text, blocks)

        def open_stream() -> AsyncIterator[StreamEvent]:
            return context.model.stream(
                context.messages,
                tool_specs,
                text,
                tool_choice=tool_choice,
                system_prompt_content=blocks,
                model_state=core.model_state,
                invocation_state=context.invocation_state,
                **extra,
            )

        chunks = open_stream() if journal is None else self._journaled(journal, place, open_stream)
        try:
            async for chunk in chunks:
                assembler.add(chunk)
                yield ModelStreamChunkEvent(chunk=chunk)
        finally:
            # Closed here, in this task, not whenever the garbage collector gets to it.
            await close_all([chunks])
        stop_reason, message, usage, metrics = assembler.finish()
        if sent is not None:
            self._tokens.calibrate(context.model, sent, usage)
        yield ModelStopReason(
            stop_reason=stop_reason, message=message, usage=usage, metrics=metrics
        )

    async def _journaled(
        self,
        journal: StepJournal,
        place: object,
        open_stream: Callable[[], AsyncIterator[StreamEvent]],
    ) -> AsyncGenerator[StreamEvent, None]:
        """The model's chunks as one journal step: live on a first run, recorded on a replay.

        Raises:
            Exception: What the model's stream raised: the exception itself on a first
                run, one rebuilt from its record on a replay (``_journal_data``).
        """
        core = self._core
        raised: list[Exception] = []

        async def body(emit: Callable[[StreamEvent], None]) -> dict[str, Any]:
            before = copy.deepcopy(core.model_state)
            chunks: list[StreamEvent] = []
            record: dict[str, Any] = {"chunks": chunks}
            stream = open_stream()
            try:
                async for chunk in stream:
                    chunks.append(chunk)
                    emit(chunk)
            except Exception as error:
                raised.append(error)
                record["error"] = describe_error(error)
            finally:
                await close_all([stream])
            if core.model_state != before:
                # What the provider keeps between calls, which the replay's model never
                # gets to write.
                record["model_state"] = copy.deepcopy(core.model_state)
            return record

        step = LiveStep[StreamEvent](journal, place, body)
        async with aclosing(step.stream()) as live:
            async for chunk in live:
                yield chunk
        record = step.record
        if not step.ran:
            if "model_state" in record:
                core.model_state.clear()
                core.model_state.update(copy.deepcopy(record["model_state"]))
            for chunk in record["chunks"]:
                yield chunk
        if "error" in record:
            raise raised[0] if raised else rebuild_error(record["error"])


def _model_name(model: object) -> str:
    """What a model-call step is called: the model's id if it has one, else its class."""
    model_id = getattr(model, "model_id", None)
    return model_id if isinstance(model_id, str) else type(model).__name__


def _with_feedback(messages: Messages, feedback: list[str]) -> Messages:
    """*messages* with *feedback* as text blocks at the end of the last user turn.

    A new list and a new last message: the history, or the copies kept of it, are left as
    they are. The same turn rather than a user message of its own, since two user turns in
    a row are refused by some providers; text after tool results is valid in every one.
    """
    texts: list[ContentBlock] = [{"text": text} for text in feedback]
    if messages and messages[-1]["role"] == "user":
        last = messages[-1]
        told: Message = {**last, "content": [*last["content"], *texts]}
        return [*messages[:-1], told]
    return [*messages, {"role": "user", "content": texts}]
