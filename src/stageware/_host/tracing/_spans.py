"""The spans of one traced invocation: the invocation, its pass, its model calls and tool calls.

They nest as the run does: ``invoke_agent`` -> ``agent_pass`` -> ``chat`` (one per model
call, retries included) and ``execute_tool`` (one per tool call). Each takes its parent
explicitly, so the concurrent tool calls of a round all hang from the pass, whichever
task runs them.

A span is made the current one (attached) only around code that does not yield across
tasks: a stream is advanced one step at a time with its span attached and detached
around that step (``_stepped``), and a tool call's span is attached in the call's own
task. So handler spans, hook callbacks and spans the application creates (in a tool, a
model client, a hook) nest under the span of the stage they run in, and a consumer that
reads a stream from another task or context never sees a span left attached.

A span ends however its work ends: an error sets status ERROR and records the exception;
an interrupt, a policy halt, a policy retry or a tool call a policy refused is an event,
not an error; a cancellation is the ``stageware.cancelled`` attribute.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from stageware._generated.contexts import AgentStreamContext, InvokeModelContext
from stageware._generated.events import (
    AgentStreamEvent,
    EventLoopStopEvent,
    InvokeModelEvent,
    ModelStopReason,
)
from stageware._generated.payloads import ToolUse
from stageware._generated.stages import AgentStreamStage, InvokeModelStage
from stageware._host._agent_result import AgentResultEvent
from stageware._host._halt import Decision, Halt, HaltRun, RedoStep, RefuseCall
from stageware._runtime import InterruptException, MiddlewareRegistry, close_all
from stageware._version import __version__

from . import _names as n

if TYPE_CHECKING:
    from stageware._host._core import AgentCore
    from stageware._host._tool_executor import ToolRound

__all__ = ["InvocationTrace", "end_span", "tracer_of"]

T = TypeVar("T")


def tracer_of(provider: TracerProvider) -> Tracer:
    """stageware's tracer from *provider*."""
    return provider.get_tracer("stageware", __version__)


@final
class InvocationTrace:
    """Creates the spans of one invocation; a pass, model call or tool call asks for its own.

    Attributes:
        tracer: Where the spans come from.
        registry: The agent's registry with every handler wrapped in a span; the traced
            invocation runs its stages through it.
    """

    __slots__ = ("_core", "_invocation", "_pass", "registry", "tracer")

    def __init__(self, tracer: Tracer, registry: MiddlewareRegistry, core: AgentCore) -> None:
        self.tracer: Tracer = tracer
        self.registry: MiddlewareRegistry = registry
        self._core = core
        # The contexts holding the invocation's and the pass's span, once they started.
        self._invocation: Context | None = None
        self._pass: Context | None = None

    def invocation(
        self, events: AsyncGenerator[AgentStreamEvent | AgentResultEvent, None]
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent, None]:
        """*events*, the invocation's stream, inside its ``invoke_agent`` span.

        The span's parent is the span current where the stream is first read.
        """
        core = self._core
        name = str(getattr(core.handle, "name", "agent"))
        attributes: dict[str, Any] = {
            n.OPERATION: "invoke_agent",
            n.AGENT_NAME: name,
            n.AGENT_ID: core.handle.agent_id,
        }
        if core.session is not None:
            attributes[n.CONVERSATION_ID] = core.session.id

        def start() -> tuple[Span, Context]:
            span = self.tracer.start_span(
                f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes=attributes
            )
            self._invocation = trace.set_span_in_context(span)
            return span, self._invocation

        return _stepped(start, events, _see_invocation_event)

    def agent_pass(
        self,
        context: AgentStreamContext,
        terminal: Callable[[AgentStreamContext], AsyncIterator[AgentStreamEvent]],
    ) -> AsyncGenerator[AgentStreamEvent, None]:
        """Run the AgentStream stage on *context* inside the pass's span."""
        attributes = {n.AGENT_NAME: str(getattr(self._core.handle, "name", "agent"))}

        def start() -> tuple[Span, Context]:
            span = self.tracer.start_span(
                "agent_pass", context=self._invocation, attributes=attributes
            )
            self._pass = trace.set_span_in_context(span, self._invocation)
            return span, self._pass

        events = self.registry.invoke(AgentStreamStage, context, terminal)
        return _stepped(start, events, _see_pass_event)

    def model_call(
        self,
        context: InvokeModelContext,
        terminal: Callable[[InvokeModelContext], AsyncIterator[InvokeModelEvent]],
    ) -> AsyncGenerator[InvokeModelEvent, None]:
        """Run the InvokeModel stage on *context* inside a ``chat`` span."""
        model_id = _model_id(context.model)

        def start() -> tuple[Span, Context]:
            attributes: dict[str, Any] = {n.OPERATION: "chat"}
            if model_id is not None:
                attributes[n.REQUEST_MODEL] = model_id
            span = self.tracer.start_span(
                f"chat {model_id}" if model_id else "chat",
                context=self._pass,
                kind=SpanKind.CLIENT,
                attributes=attributes,
            )
            return span, trace.set_span_in_context(span, self._pass)

        events = self.registry.invoke(InvokeModelStage, context, _RoutedTerminal(terminal))
        return _stepped(start, events, _see_model_event)

    async def tool_call(self, tool_use: ToolUse, round_: ToolRound, call: Awaitable[None]) -> None:
        """Await *call*, the tool call *tool_use* of *round_*, inside an ``execute_tool`` span.

        Awaited in the call's own task, so the span is current for everything the call
        runs: its hooks, its ExecuteTool chain and the tool itself.
        """
        name = tool_use["name"]
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._pass,
            kind=SpanKind.INTERNAL,
            attributes={
                n.OPERATION: "execute_tool",
                n.TOOL_NAME: name,
                n.TOOL_CALL_ID: tool_use["toolUseId"],
                n.TOOL_TYPE: "function",
            },
        )
        token = otel_context.attach(trace.set_span_in_context(span, self._pass))
        error: BaseException | None = None
        try:
            await call
        except BaseException as raised:
            error = raised
            raise
        finally:
            otel_context.detach(token)
            if error is None:
                _see_tool_outcome(span, tool_use["toolUseId"], round_)
            end_span(span, error)

    def decision(self, record: Decision, started_ns: int) -> None:
        """Record a policy decision taken since *started_ns* as a span of the current one."""
        span = self.tracer.start_span(
            f"policy {record.hook}",
            start_time=started_ns,
            attributes={
                n.POLICY_HOOK: record.hook,
                n.POLICY_MIDDLEWARE: record.middleware,
                n.POLICY_BAND: record.band,
                n.POLICY_OUTCOME: record.outcome,
                n.POLICY_MODIFIED: record.modified,
            },
        )
        if record.reason is not None:
            span.set_attribute(n.POLICY_REASON, record.reason)
        if record.approver is not None:
            span.set_attribute(n.POLICY_APPROVER, record.approver)
        if record.error is not None:
            span.set_attribute(n.POLICY_ERROR, record.error)
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end(time.time_ns())


def end_span(span: Span, error: BaseException | None) -> None:
    """End *span*, noting how *error* (if any) ended its work."""
    if isinstance(error, InterruptException):
        interrupt = error.interrupt
        span.set_attribute(n.INTERRUPTED, True)
        span.add_event(
            "interrupt",
            {"stageware.interrupt.id": interrupt.id, "stageware.interrupt.name": interrupt.name},
        )
    elif isinstance(error, HaltRun):
        span.add_event("halt", _halt_attributes(error.halt))
    elif isinstance(error, RedoStep):
        attributes = {"stageware.reason": str(error)}
        if error.feedback is not None:
            attributes["stageware.feedback"] = error.feedback
        span.add_event("retry", attributes)
    elif isinstance(error, RefuseCall):
        span.add_event("refused", {"stageware.reason": error.message})
    elif isinstance(error, GeneratorExit):
        pass  # Its consumer stopped reading: the work ended early, not in error.
    elif isinstance(error, Exception):
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        span.set_attribute(n.ERROR_TYPE, type(error).__qualname__)
    elif error is not None:
        span.set_attribute(n.CANCELLED, True)
    span.end()


async def _stepped(
    start: Callable[[], tuple[Span, Context]],
    events: AsyncGenerator[T, None],
    see: Callable[[Span, T], None],
) -> AsyncGenerator[T, None]:
    """Yield *events*, each step run with the span *start* begins current; end it with them.

    The span starts on the first step, so a stream that is closed unread starts none.
    """
    span, current = start()
    error: BaseException | None = None
    try:
        while True:
            token = otel_context.attach(current)
            try:
                event = await anext(events)
            except StopAsyncIteration:
                break
            finally:
                otel_context.detach(token)
            see(span, event)
            yield event
    except BaseException as raised:
        error = raised
        raise
    finally:
        token = otel_context.attach(current)
        try:
            await events.aclose()
        finally:
            otel_context.detach(token)
            end_span(span, error)


@final
class _RoutedTerminal:
    """A model-call terminal that notes on the current (``chat``) span the model it calls.

    That is the model of the context the terminal gets, which middleware may have routed
    elsewhere. Equal to another wrapping the same terminal, so the registry reuses its
    chain.
    """

    __slots__ = ("_terminal",)

    def __init__(
        self, terminal: Callable[[InvokeModelContext], AsyncIterator[InvokeModelEvent]]
    ) -> None:
        self._terminal = terminal

    def __call__(self, context: InvokeModelContext) -> AsyncIterator[InvokeModelEvent]:
        return self._stream(context)

    async def _stream(self, context: InvokeModelContext) -> AsyncIterator[InvokeModelEvent]:
        # A generator, so the span is read on the first step, when the ``chat`` span is
        # current: ``invoke()`` on a stage without handlers calls the terminal at once.
        model_id = _model_id(context.model)
        if model_id is not None:
            span = trace.get_current_span()
            span.set_attribute(n.REQUEST_MODEL, model_id)
            span.update_name(f"chat {model_id}")
        events = self._terminal(context)
        try:
            async for event in events:
                yield event
        finally:
            await close_all([events])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RoutedTerminal) and other._terminal == self._terminal

    def __hash__(self) -> int:
        return hash(self._terminal)


def _model_id(model: object) -> str | None:
    model_id = getattr(model, "model_id", None)
    return model_id if isinstance(model_id, str) else None


def _see_invocation_event(span: Span, event: AgentStreamEvent | AgentResultEvent) -> None:
    if not isinstance(event, AgentResultEvent):
        return
    result = event.result
    span.set_attribute(n.STOP_REASON, result.stop_reason)
    usage = result.metrics.usage
    span.set_attribute(n.INPUT_TOKENS, usage["inputTokens"])
    span.set_attribute(n.OUTPUT_TOKENS, usage["outputTokens"])
    if result.interrupts:
        span.set_attribute(n.INTERRUPTS, [interrupt.id for interrupt in result.interrupts])
    if result.halt is not None:
        span.set_attributes(_halt_attributes(result.halt))


def _see_pass_event(span: Span, event: AgentStreamEvent) -> None:
    if isinstance(event, EventLoopStopEvent):
        span.set_attribute(n.STOP_REASON, event.stop_reason)


def _see_model_event(span: Span, event: InvokeModelEvent) -> None:
    if isinstance(event, ModelStopReason):
        span.set_attribute(n.FINISH_REASONS, (event.stop_reason,))
        span.set_attribute(n.INPUT_TOKENS, event.usage["inputTokens"])
        span.set_attribute(n.OUTPUT_TOKENS, event.usage["outputTokens"])


def _see_tool_outcome(span: Span, tool_use_id: str, round_: ToolRound) -> None:
    """Note on a finished tool call's span what became of the call."""
    result = round_.results.get(tool_use_id)
    if result is None:
        result = round_.skipped.get(tool_use_id)
        if result is not None:
            span.set_attribute(n.CANCELLED, True)
    if result is None:
        # No result and no error: the call stopped on an interrupt, to resume later.
        span.set_attribute(n.INTERRUPTED, True)
        return
    status = result.get("status", "success")
    span.set_attribute(n.TOOL_STATUS, status)
    if status == "error":
        texts = [block["text"] for block in result["content"] if "text" in block]
        span.set_status(Status(StatusCode.ERROR, texts[0] if texts else "the tool call failed"))
        span.set_attribute(n.ERROR_TYPE, "tool_error")


def _halt_attributes(halt: Halt) -> dict[str, str]:
    return {
        n.STOP_REASON: halt.stop_reason,
        n.HALT_HOOK: halt.hook,
        n.HALT_MIDDLEWARE: halt.middleware,
        n.HALT_REASON: halt.reason,
    }
