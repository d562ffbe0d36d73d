"""The agent: conversation history, a model, tools, middleware, hooks and sessions."""

from __future__ import annotations

import concurrent.futures
import copy
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, final, overload

import anyio

from stageware._generated.events import AgentStreamEvent
from stageware._generated.payloads import Messages, SystemContentBlock, ToolChoice
from stageware._generated.stages import InvokeModelStage, InvokeModelWrapHandler
from stageware._runtime import Interrupt, MiddlewareHost, MiddlewareRegistration

from ._agent_as_tool import (
    AgentAsTool,
    SubAgentAnswers,
    SubAgentLink,
    default_tool_name,
    tree_ids,
)
from ._agent_id import checked_agent_id
from ._agent_result import AgentResult, AgentResultEvent, OutputT
from ._agent_state import AgentState
from ._agent_tools import AgentTools
from ._cancel import CancelToken
from ._core import AgentCore, AgentExtension
from ._event_loop import EventLoop
from ._hook_events import LifecycleEvent
from ._interrupt_state import InterruptState, InterruptStateError
from ._invocation import Invocation
from ._limits import DEFAULT_MAX_MODEL_CALLS, checked_max_model_calls
from ._model_retry import ModelRetryStrategy
from ._prompt import Prompt, prompt_messages
from ._running_loop import running_loop
from ._session import DEFAULT_LEASE_SECONDS, AgentSession
from ._structured_output import (
    DEFAULT_OUTPUT_RETRIES,
    StructuredRun,
    checked_output_retries,
    structured_run,
)
from ._task_stream import TaskHost, in_own_task
from .models import Model
from .sessions import SessionError, SessionStore, StoredSession
from .sessions._store import check_session_id
from .tools import AgentTool, ToolProvider
from .tracing import Tracing

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Agent", "ConcurrentInvocationError", "host_invocations"]

EventT = TypeVar("EventT", bound=LifecycleEvent)

# Frozen, so one instance can be every agent's default.
_DEFAULT_RETRY_STRATEGY = ModelRetryStrategy()


class ConcurrentInvocationError(RuntimeError):
    """An agent was invoked while another invocation of it was still running."""


@final
class Agent(MiddlewareHost):
    """An agent that runs the InvokeModel, ExecuteTool and AgentStream stages for real.

    Example:
        ```python
        agent = Agent(model=ScriptedModel(["Hello!"]), system_prompt="Be brief.")
        agent.add_middleware(InvokeModelStage.Input, lambda ctx: ctx.replace(tool_specs=[]))
        result = agent("Hi")
        print(result.stop_reason, result)
        ```

    Args:
        model: The model to call; middleware may route single calls elsewhere.
        tools: The tools the model may call, and tool providers whose tools it may call
            (``stageware.mcp.MCPClient``: an MCP server's tools, read again at every
            model call, so a server's change of its tools reaches the next call); names
            must be unique.
        system_prompt: A string, or system content blocks.
        messages: The conversation to start from (copied).
        tool_choice: How the model selects tools; ``None`` lets the provider decide.
        name: The agent's name, as middleware and hooks see it.
        agent_id: Identifies the agent in interrupt ids, session keys and traces: every
            interrupt id it raises is scoped by it, so two agents running one gate (two
            sub-agents of a parent, two nodes of a graph) get distinct ids and an answer
            reaches only the agent that asked. ASCII letters, digits, ``_``, ``-`` and
            ``.``; by default derived from ``name`` (``"My agent"`` -> ``"My_agent"``).
            Give agents whose interrupts one caller answers distinct ids, and keep an
            agent's id across restarts: a resumed run recomputes its interrupt ids.
        state: JSON key-value state kept with the session (copied).
        session_store: Where to persist the conversation and interrupt state; with
            ``session_id``, a stored session is loaded now, claimed at the start of every
            invocation and saved at its end, so a restarted process, or another worker,
            can resume an interrupted run. A save is refused with
            ``SessionConflictError`` if another worker saved the session since this agent
            loaded it, and an invocation holds a lease on the session while it runs (the
            guide "Sessions across workers" has the guarantees).
        session_id: The session's key in ``session_store``.
        session_lease: Seconds a worker's hold on the session lasts without renewal; it is
            renewed while an invocation runs, so this is how long a worker that died
            blocks the session.
        backend: The anyio backend the synchronous ``agent(...)`` call runs on.
        retry_strategy: How a model call that raised ``ModelThrottledError`` is retried
            (by default up to 6 attempts, backing off from 4 s to at most 240 s, and
            honouring ``Retry-After``); ``None`` never retries it.
        max_model_calls: How many model calls one invocation may make, retries included
            (50 by default); then it stops with ``stop_reason="limit_model_calls"``.
            ``None`` for no limit.
        policy: A policy to enforce on every run (``stageware.policy.load_policy(...)`` or
            a ``PolicyEngine``). Its middleware are installed first, so they are the
            outermost of each stage phase, around any middleware added later.
        tracer_provider: Where to send the OpenTelemetry spans of every invocation. By
            default they go to the global provider once the application has set one
            (``opentelemetry.trace.set_tracer_provider``), and no spans are made before.
        conversation_manager: What each model call is sent of a long conversation: an
            InvokeModel Wrap handler such as ``stageware.middleware.SlidingWindow`` or
            ``Summarizing``, installed after the policy's middleware and before any added
            later. It shapes the request only; the history and the session keep every
            message. ``None`` (the default) sends the whole history.

    Raises:
        TypeError: If *model* has no ``stream()`` method, an item of *tools* is not a
            tool (an undecorated function, say), or ``max_model_calls`` is not an int.
        ValueError: For an ``agent_id`` with characters outside the set above (or empty),
            duplicate tool names (naming both tools' sources), a session
            store without an id (or the reverse), a ``state`` value that is not JSON
            data, a ``session_lease`` that is not positive, ``messages`` / ``state``
            given for a stored session that already has them, or a ``max_model_calls``
            below 1.
        SessionError: If the session id cannot be stored, or the stored session cannot
            be read.
    """

    def __init__(
        self,
        model: Model,
        *,
        tools: Iterable[AgentTool | ToolProvider] = (),
        system_prompt: str | list[SystemContentBlock] | None = None,
        messages: Messages | None = None,
        tool_choice: ToolChoice | None = None,
        name: str = "agent",
        agent_id: str | None = None,
        state: dict[str, Any] | None = None,
        session_store: SessionStore | None = None,
        session_id: str | None = None,
        session_lease: float = DEFAULT_LEASE_SECONDS,
        backend: Literal["asyncio", "trio"] = "asyncio",
        retry_strategy: ModelRetryStrategy | None = _DEFAULT_RETRY_STRATEGY,
        max_model_calls: int | None = DEFAULT_MAX_MODEL_CALLS,
        policy: AgentExtension | None = None,
        tracer_provider: TracerProvider | None = None,
        conversation_manager: InvokeModelWrapHandler | None = None,
    ) -> None:
        # Checked now, like the tools: a model name passed instead of a model would
        # otherwise fail only at the first call.
        if not isinstance(cast(object, model), Model):
            raise TypeError(
                f"model must be a Model (an object with a stream() method, such as "
                f"ScriptedModel or stageware.openai.OpenAIModel), got {model!r}"
            )
        self.name = name
        self._agent_id = checked_agent_id(agent_id, name)
        tool_items = list(tools)
        self._backend = backend
        # A lock, not a flag: sync calls from two threads must not both get in.
        self._running = threading.Lock()
        if (session_store is None) != (session_id is None):
            raise ValueError("session_store and session_id must be given together")
        if not session_lease > 0:
            raise ValueError(
                f"session_lease must be a positive number of seconds, got {session_lease!r}"
            )
        self._core = AgentCore(
            handle=self,
            model=model,
            tools=AgentTools(tool_items),
            system_prompt=copy.deepcopy(system_prompt),
            tool_choice=copy.deepcopy(tool_choice),
            messages=prompt_messages(messages) if messages else [],
            state=AgentState(state),
            model_state={},
            retry_strategy=retry_strategy,
            max_model_calls=checked_max_model_calls(max_model_calls),
            tracing=Tracing(tracer_provider),
        )
        self._event_loop = EventLoop(self._core)
        # The session this agent keeps under a parent's, when it runs as a parent's tool.
        self._under_parent: str | None = None
        # What runs each invocation's task, when not the agent (see host_invocations).
        self._task_host: TaskHost | None = None
        if policy is not None:
            # First, so that policy handlers are the outermost of every phase.
            policy.install(self._core)
        if conversation_manager is not None:
            # Next: user middleware added later (a cache, a fallback) sees the request
            # the model is sent, and an overflow it lets through reaches the manager.
            self.add_middleware(InvokeModelStage, conversation_manager)
        # The sub-agents at every depth: an interrupt id carries only its agent's id, so
        # one id twice in a tree would let one answer release two steps.
        self._tree = tree_ids(tool_items)
        named: dict[str, str] = {self._agent_id: f"this agent {name!r}"}
        for sub_id, sub_name in self._tree:
            if sub_id in named:
                raise ValueError(
                    f"{named[sub_id]} and the sub-agent {sub_name!r} both have the agent_id "
                    f"{sub_id!r}; an agent and its sub-agents at every depth need ids of "
                    "their own (Agent(agent_id=...)), which keep their interrupt ids apart"
                )
            named[sub_id] = f"the sub-agent {sub_name!r}"
        self._sub_link: SubAgentLink | None = None
        # First: an answer to a sub-agent's interrupt is the sub-agent's to check. Every
        # agent has it: a tool provider may hand it a sub-agent at any time.
        self._core.answer_checks.insert(0, SubAgentAnswers(self, self._core.tools.tools))
        if session_store is not None and session_id is not None:
            session = AgentSession(
                session_store,
                check_session_id(session_id, repr(session_store)),
                lease_seconds=session_lease,
            )
            self._core.session = session
            stored = session.load()
            if stored is not None:
                self._adopt(stored, messages_given=bool(messages), state_given=bool(state))

    # -- configuration and state -------------------------------------------------------

    @property
    def agent_id(self) -> str:
        """Identifies the agent in interrupt ids, session keys and traces (read-only)."""
        return self._agent_id

    @property
    def messages(self) -> Messages:
        """The conversation history: Converse-style message dicts, oldest first."""
        return self._core.messages

    @messages.setter
    def messages(self, messages: Messages) -> None:
        self._core.messages = messages

    @property
    def model(self) -> Model:
        """The model calls go to unless middleware routes them elsewhere."""
        return self._core.model

    @model.setter
    def model(self, model: Model) -> None:
        self._core.model = model

    @property
    def system_prompt(self) -> str | list[SystemContentBlock] | None:
        """The system prompt."""
        return self._core.system_prompt

    @system_prompt.setter
    def system_prompt(self, system_prompt: str | list[SystemContentBlock] | None) -> None:
        self._core.system_prompt = system_prompt

    @property
    def max_model_calls(self) -> int | None:
        """How many model calls one invocation may make, retries included; ``None``: no limit.

        Raises:
            TypeError: When set to something other than an int or ``None``.
            ValueError: When set below 1.
        """
        return self._core.max_model_calls

    @max_model_calls.setter
    def max_model_calls(self, max_model_calls: int | None) -> None:
        self._core.max_model_calls = checked_max_model_calls(max_model_calls)

    @property
    def state(self) -> AgentState:
        """JSON key-value state that travels with the session; a value must be JSON data."""
        return self._core.state

    @property
    def tool_names(self) -> list[str]:
        """The names of the agent's tools now (a tool provider's may change)."""
        return self._core.tools.names()

    @property
    def pending_interrupts(self) -> list[Interrupt]:
        """The interrupts waiting for an answer.

        Non-empty while the next call must be a resume with their answers. Empty when
        nothing is waiting, and also when every answer is in but the resume that used them
        was cut short (an error, a cancellation): then ``agent()`` with no prompt
        continues it.
        """
        return self._core.interrupts.pending() if self._core.interrupts.activated else []

    def add_hook(
        self, callback: Callable[[EventT], Awaitable[None] | None], event_type: type[EventT]
    ) -> None:
        """Call *callback* (sync or async) with every event of *event_type*.

        Raises:
            TypeError: If *event_type* is not a lifecycle event class.
        """
        self._core.hooks.add(callback, event_type)

    def _register_middleware(self, registration: MiddlewareRegistration) -> None:
        self._core.registry.add_registration(registration)

    def cancel(self) -> None:
        """Ask the running invocation to stop; it ends with ``stop_reason="cancelled"``.

        Safe to call from another thread, a hook, middleware or a tool. Calls that have
        not started are not run; running tools see ``cancel_signal.is_set()`` and should
        stop early. Whatever has not stopped within 0.5 s (a stalled model stream, a tool
        or middleware awaiting) is cancelled, so the invocation ends within about 1 s;
        a sync tool's thread cannot be stopped, and its late result is discarded. Called
        between invocations, it cancels the next one (as in Strands 1.62): the signal is
        cleared only when an invocation finishes.
        """
        self._core.cancel.set()

    # -- invoking ----------------------------------------------------------------------

    @overload
    def __call__(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[None]: ...
    @overload
    def __call__(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[OutputT],
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[OutputT]: ...
    @overload
    def __call__(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: type[OutputT],
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[OutputT]: ...
    def __call__(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[Any] | None = None,
        structured_output_model: type[Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[Any]:
        """Run the agent on *prompt* and return its result (blocking).

        Resume an interrupted run with
        ``agent([{"interruptResponse": {"interruptId": ..., "response": ...}}])``.
        Inside a running event loop, use ``await agent.invoke_async(...)`` instead; called
        there anyway, the run goes to a worker thread and this call blocks the loop.

        Args:
            prompt: The user's input, or the answers that resume an interrupted run.
            invocation_state: State shared with hooks, middleware and tools for this run.
            output_type: Ask for a structured output: a pydantic model or a ``TypedDict``.
                The run ends when the model gives a valid one, and ``result.output`` is
                it, typed. A resume must pass the interrupted run's ``output_type`` again.
            structured_output_model: Strands' name for ``output_type``.
            output_retries: How many replies that do not validate go back to the model
                with the errors before ``StructuredOutputError`` is raised (2 by default).

        Raises:
            StructuredOutputError: When the model's replies still do not validate after
                ``output_retries`` corrections; it carries the last reply and the errors.
            TypeError: If ``output_type`` is not a pydantic model or a ``TypedDict``, or a
                resume asks for another output than the interrupted run did.
            ValueError: If ``output_type`` and ``structured_output_model`` differ, or one
                of the agent's tools has the output type's name.
        """
        output = self._structured_run(output_type, structured_output_model, output_retries)

        def run() -> AgentResult[Any]:
            return anyio.run(
                self._invoke_with, prompt, invocation_state, output, backend=self._backend
            )

        if running_loop() is None:
            return run()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(run).result()

    async def _invoke_with(
        self,
        prompt: Prompt,
        invocation_state: dict[str, Any] | None,
        output: StructuredRun | None,
    ) -> AgentResult[Any]:
        return await self._invoke(prompt, invocation_state, output)

    @overload
    async def invoke_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[None]: ...
    @overload
    async def invoke_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[OutputT],
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[OutputT]: ...
    @overload
    async def invoke_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: type[OutputT],
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[OutputT]: ...
    async def invoke_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[Any] | None = None,
        structured_output_model: type[Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AgentResult[Any]:
        """Run the agent on *prompt* and return its result; the arguments are ``__call__``'s."""
        output = self._structured_run(output_type, structured_output_model, output_retries)
        return await self._invoke(prompt, invocation_state, output)

    async def _invoke(
        self,
        prompt: Prompt,
        invocation_state: dict[str, Any] | None,
        output: StructuredRun | None,
    ) -> AgentResult[Any]:
        result: AgentResult[Any] | None = None
        # Read to the end here, or closed here: the run may stay in this task.
        events = self._invocation(prompt, invocation_state, output, own_task=False)
        async with aclosing(events):
            async for event in events:
                if isinstance(event, AgentResultEvent):
                    result = event.result
        assert result is not None  # an invocation always ends with its result or raises
        return result

    @overload
    def stream_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[None], None]: ...
    @overload
    def stream_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[OutputT],
        structured_output_model: None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[OutputT], None]: ...
    @overload
    def stream_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: None = None,
        structured_output_model: type[OutputT],
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[OutputT], None]: ...
    def stream_async(
        self,
        prompt: Prompt = None,
        *,
        invocation_state: dict[str, Any] | None = None,
        output_type: type[Any] | None = None,
        structured_output_model: type[Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[Any], None]:
        """Run the agent on *prompt*, yielding the AgentStream events as they happen.

        The last event is an ``AgentResultEvent`` built from the last
        ``EventLoopStopEvent`` the chain yielded. Consume the stream to the end, or close
        it (``contextlib.aclosing``) when stopping early, so the invocation has finished
        (and the next one may start) when you go on. The run itself goes on in a task of
        its own, advanced as you read, so a stream left to the garbage collector is still
        cleaned up properly. The arguments are ``__call__``'s; with ``output_type=M`` the
        last event's ``result`` is an ``AgentResult[M]``.

        Raises:
            ConcurrentInvocationError: If the agent is already running.
            RuntimeError: If middleware dropped the stop event.
            StructuredOutputError: See ``__call__``.
        """
        output = self._structured_run(output_type, structured_output_model, output_retries)
        return self._invocation(prompt, invocation_state, output, own_task=True)

    def _structured_run(
        self,
        output_type: type[Any] | None,
        structured_output_model: type[Any] | None,
        output_retries: int,
    ) -> StructuredRun | None:
        """The structured state of one call, or ``None`` for a plain run; checked now."""
        retries = checked_output_retries(output_retries)
        both = output_type is not None and structured_output_model is not None
        if both and output_type is not structured_output_model:
            raise ValueError(
                f"output_type={output_type!r} and structured_output_model="
                f"{structured_output_model!r} differ; pass one of them (the second is "
                "Strands' name for the first)"
            )
        wanted = output_type if output_type is not None else structured_output_model
        if wanted is None:
            return None
        return structured_run(wanted, retries, self._core.tools.names())

    async def _invocation(
        self,
        prompt: Prompt,
        invocation_state: dict[str, Any] | None,
        output: StructuredRun | None,
        *,
        own_task: bool,
    ) -> AsyncGenerator[AgentStreamEvent | AgentResultEvent[Any], None]:
        if not self._running.acquire(blocking=False):
            raise ConcurrentInvocationError(
                f"agent {self.name!r} is already running an invocation; an agent runs one "
                "invocation at a time. If you stopped iterating stream_async() early, close "
                "it (async with contextlib.aclosing(agent.stream_async(...)) as events: ...) "
                "so the invocation finishes before the next one starts."
            )
        try:
            state = {} if invocation_state is None else invocation_state
            trace = self._core.tracing.start(self._core)
            invocation = Invocation(self._core, self._event_loop, trace, output)
            events = invocation.stream(prompt, state)
            if trace is not None:
                events = trace.invocation(events)
            if self._task_host is not None:
                # A durable engine runs the whole invocation in a task of its own (its
                # workflow): from the claim of the session to the final save.
                events = in_own_task(events, host=self._task_host)
            elif own_task:
                # The run's scopes must not be left in another task, which is where the
                # garbage collector closes a stream its reader abandoned.
                events = in_own_task(events)
            try:
                async for event in events:
                    yield event
            finally:
                await events.aclose()
        finally:
            # A new token rather than a cleared one: the finished invocation's tools and
            # middleware may still hold theirs. A cancel() from now on is for the next one.
            self._core.cancel = CancelToken()
            self._running.release()

    # -- as a tool of another agent ----------------------------------------------------

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        preserve_context: bool = False,
        output_type: type[Any] | None = None,
    ) -> AgentAsTool:
        """This agent as a tool another agent's model can call: ``Agent(tools=[sub.as_tool()])``.

        The tool takes one string, ``input``, runs this agent on it and returns its final
        text. Its events stream through the parent's tool stream, its interrupts become the
        parent's (answered through the parent's resume), the parent's cancel cancels it,
        and without a session store of its own its session is kept in the parent's store
        under ``<parent session id>/<agent_id>``. See the agents guide's "Agents as tools".

        Args:
            name: The tool's name; by default the agent's ``agent_id``, with ``.`` as
                ``_`` and cut to 64 characters (what OpenAI and Bedrock accept).
            description: What the parent's model is told the tool does.
            preserve_context: Keep this agent's history between calls; by default (as in
                Strands) every call starts from the history and state it had when
                ``as_tool()`` was called.
            output_type: Run with ``output_type=`` and return the structured output as the
                result's ``json`` block instead of the text.

        Raises:
            ValueError: If *name* is empty, or this agent has a session store of its own
                and ``preserve_context`` is false (as in Strands: every call would reset
                the history the store keeps).
        """
        tool_name = default_tool_name(self.agent_id) if name is None else name
        if not tool_name:
            raise ValueError("as_tool(name=...) must not be empty")
        if not preserve_context and self._core.session is not None and self._under_parent is None:
            raise ValueError(
                f"agent {self.name!r} has a session store of its own, whose history every "
                "call of the tool would reset; pass as_tool(preserve_context=True), or give "
                "the agent no store (its session is then kept under its parent's)"
            )
        if self._sub_link is None:
            self._sub_link = SubAgentLink(
                self._core, self._attach_under, self._kept_under, self._tree
            )
        return AgentAsTool(
            self,
            self._sub_link,
            name=tool_name,
            description=description or f"Ask the {self.name!r} agent; give it your request.",
            preserve_context=preserve_context,
            output_type=output_type,
        )

    def _kept_under(self, parent: object) -> bool:
        """Whether this agent's session is the one kept under *parent*'s (see ``as_tool``)."""
        if not isinstance(parent, Agent) or self._under_parent is None:
            return False
        parents = parent._core.session
        return parents is not None and self._under_parent == f"{parents.id}/{self.agent_id}"

    def _attach_under(self, parent: object) -> None:
        """Keep this agent's session under *parent*'s (see ``as_tool``), loading it once.

        An agent with a session store of its own keeps it; a parent without one leaves
        this agent in memory.
        """
        if not isinstance(parent, Agent):
            return
        own = self._core.session
        parents = parent._core.session
        if parents is None or (own is not None and self._under_parent is None):
            return
        key = f"{parents.id}/{self.agent_id}"
        if own is not None and self._under_parent == key and own.store is parents.store:
            return
        session = AgentSession(
            parents.store,
            check_session_id(key, repr(parents.store)),
            lease_seconds=DEFAULT_LEASE_SECONDS,
        )
        stored = session.load()
        self._core.session = session
        self._under_parent = key
        if stored is not None:
            self._adopt(stored, messages_given=False, state_given=False, reload=True)
        else:
            self._core.interrupts = InterruptState()

    # -- sessions ----------------------------------------------------------------------

    @property
    def session_version(self) -> int | None:
        """The version of the stored session this agent holds (0 before its first save).

        ``None`` without a session store. Every save bumps it; a save is refused with
        ``SessionConflictError`` if another worker saved the session since.
        """
        session = self._core.session
        return None if session is None else session.version

    def reload_session(self) -> None:
        """Load the stored session again, replacing the history, state and interrupts.

        The way to recover from a ``SessionConflictError``: another worker saved the
        session after this agent loaded it, so reload and retry the invocation (or fail).
        What this agent changed since its last save is dropped.

        Raises:
            RuntimeError: Without a session store, or while an invocation runs.
            SessionError: If the stored session cannot be read.
        """
        session = self._core.session
        if session is None:
            raise RuntimeError(f"agent {self.name!r} has no session store to reload from")
        if not self._running.acquire(blocking=False):
            raise RuntimeError(f"agent {self.name!r} is running; reload between invocations")
        try:
            stored = session.load()
            core = self._core
            if stored is None:
                core.messages, core.state, core.model_state = [], AgentState(), {}
                core.interrupts = InterruptState()
            else:
                self._adopt(stored, messages_given=False, state_given=False, reload=True)
        finally:
            self._running.release()

    def _adopt(
        self,
        stored: StoredSession,
        *,
        messages_given: bool,
        state_given: bool,
        reload: bool = False,
    ) -> None:
        session = self._core.session
        assert session is not None  # only agents with a session store adopt one
        snapshot = stored.snapshot
        # A stored session wins over constructor arguments; refusing both is clearer than
        # ignoring one of them.
        present = {"messages": bool(snapshot["messages"]), "state": bool(snapshot["state"])}
        for given, key in ((messages_given, "messages"), (state_given, "state")):
            if given and present[key]:
                raise ValueError(
                    f"session {session.id!r} in {session.store!r} already has {key}; do not "
                    f"pass {key}= when resuming a stored session"
                )
        try:
            interrupts = InterruptState.from_dict(snapshot["interrupt_state"])
        except InterruptStateError as error:
            raise SessionError(f"session {session.id!r} in {session.store!r}: {error}") from error
        core = self._core
        if reload:
            # The store is the truth: an empty history or state there (another worker
            # cleared it) replaces what this agent still holds.
            core.messages = snapshot["messages"]
            core.state = AgentState(snapshot["state"])
        else:
            # An empty stored history or state (a session whose first call failed early,
            # say) gives way to what the constructor was given.
            core.messages = snapshot["messages"] or core.messages
            core.state = AgentState(snapshot["state"]) if snapshot["state"] else core.state
        core.model_state = snapshot["model_state"]
        core.interrupts = interrupts

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, agent_id={self.agent_id!r}, tools={self.tool_names!r})"


def host_invocations(agent: Agent, host: TaskHost | None) -> None:
    """Have *host* run each of *agent*'s invocations in a task of its own (``None``: none).

    For a durable-execution engine (``stageware.dbos.run_durably``): every entry point
    (``agent()``, ``invoke_async``, ``stream_async``) then runs the invocation in the
    host's task, advanced in lockstep with its reader as ``stream_async`` runs it.
    """
    agent._task_host = host  # pyright: ignore[reportPrivateUsage]
