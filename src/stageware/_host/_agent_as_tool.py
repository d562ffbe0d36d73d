"""An agent run as a tool of another agent (``agent.as_tool()``), and the routing of answers.

The rules kept here:

- **Input and result.** The tool takes one string, ``input`` (Strands' schema), runs the
  sub-agent on it and returns its final text; asked for a structured output
  (``as_tool(output_type=M)``), it returns the output as a ``json`` block instead.
- **Events.** Each event the sub-agent streams reaches the parent as
  ``ToolStreamEvent(tool_use=<the parent's call>, data=<the sub-agent's event>)``, live,
  so the parent's ``stream_async`` readers and ExecuteTool middleware see it. The sub-agent's
  ``AgentResultEvent`` is not forwarded: the tool's result stands for it.
- **Interrupts.** A sub-agent that stops for a human makes the call end with a
  ``ToolInterruptEvent`` carrying the sub-agent's interrupts, ids unchanged: they are
  scoped by the sub-agent's ``agent_id``, so two sub-agents running one gate never share an
  id. The parent registers them as its own tool interrupts and stops. On the parent's
  resume, ``SubAgentAnswers`` (an ``AnswerCheck`` every agent installs first) recognises the
  ids a sub-agent waits on, among the parent's tools at that moment (a tool provider's
  included) and the sub-agents suspended in one of its calls, and has the sub-agent's own
  checks verify each answer (a policy approval is identity-checked by the sub-agent's
  policy); the parent stores the verified record. When the parent replays the call, the
  tool hands the sub-agent only records its checks verified; an answer to an interrupt the
  sub-agent checks that did not go through them (a parent that did not recognise the tool,
  or a record written around the check) is dropped and the interrupt surfaced again, so it
  is asked anew. One the sub-agent did not get an answer for is surfaced again too.
- **One parent call per suspended run.** A suspended sub-run belongs to the parent and the
  call (toolUseId) it stopped in; any other call (another parent sharing the sub-agent, or
  a new call of the same parent) gets an error result saying it waits for an answer in
  another call. A run reloaded from the parent's session after a restart is that parent's.
- **Agent ids.** A sub-agent's interrupt ids are scoped by its ``agent_id`` only, so no two
  agents of one tree (the parent, its sub-agents at every depth) may share one: ``Agent()``
  refuses such a tree, and a call whose sub-agent tree holds the caller's id is refused.
- **Result.** A run that stopped without an answer (a limit, a block, an escalation, a
  context-window overflow, a cancel, a structured run without output) is an error result
  naming the stop reason, never an empty success.
- **Cancel.** The parent's cancel signal cancels the sub-agent's run.
- **Sessions.** A sub-agent without a session store of its own keeps its session in the
  parent's store, under ``<parent session id>/<sub-agent agent_id>``, so a parent restarted
  in a new process (new objects, same store) finds the suspended sub-agent there.
- **One call at a time.** A sub-agent runs one invocation at a time: a second call while one
  runs (the parent's model calling it twice in one turn) gets an error result that tells
  the model to call it again later.
"""

from __future__ import annotations

import copy
import re
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Final, cast, final

from stageware._generated.events import (
    ExecuteToolEvent,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolStreamEvent,
)
from stageware._generated.payloads import Messages, ToolResult, ToolSpec, ToolUse
from stageware._runtime import Interrupt

from ._agent_result import AgentResult, AgentResultEvent
from ._agent_state import AgentState
from ._cancel import CancelToken
from ._interrupt_state import AnswerCheck
from .tools import ToolContext, error_result

if TYPE_CHECKING:
    from ._agent import Agent
    from ._core import AgentCore

__all__ = ["AgentAsTool", "SubAgentAnswers", "SubAgentLink", "default_tool_name", "tree_ids"]

# Stop reasons that mean the sub-agent answered; any other is an error result.
_ANSWERED: Final = frozenset({"end_turn", "stop_sequence", "max_tokens"})
# What OpenAI and Bedrock accept as a tool name.
_TOOL_NAME_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_NAME: Final = 64


def default_tool_name(agent_id: str) -> str:
    """The tool name ``as_tool()`` gives by default: *agent_id* in the characters providers
    accept for tool names (``A-Z a-z 0-9 _ -``, ``.`` becomes ``_``), at most 64."""
    return _TOOL_NAME_UNSAFE.sub("_", agent_id)[:_MAX_TOOL_NAME]


def tree_ids(items: Sequence[object]) -> list[tuple[str, str]]:
    """The agent ids of the sub-agents among *items* (fixed tools), at every depth, each
    with the sub-agent's name: ``(agent_id, name)``, depth first."""
    found: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, AgentAsTool):
            sub = item.agent
            found.append((sub.agent_id, sub.name))
            found.extend(item.link.tree)
    return found


@final
class _Owner:
    """The parent call a suspended sub-run belongs to."""

    __slots__ = ("parent", "state", "tool_use_id")

    def __init__(self, parent: object, tool_use_id: str, state: object) -> None:
        self.parent: weakref.ref[object] = weakref.ref(parent)
        self.tool_use_id: str = tool_use_id
        # The sub-agent's InterruptState then: a state reloaded from a session is another.
        self.state: object = state


# Sub-agents suspended in a parent's call, so the parent finds them at its resume even
# when the tool reached it wrapped in a tool of the user's own.
_SUSPENDED: weakref.WeakSet[SubAgentLink] = weakref.WeakSet()

_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "What to ask the agent, in plain words."}
    },
    "required": ["input"],
}


@final
class SubAgentLink:
    """What the host needs of a sub-agent beyond its public surface (built by ``as_tool``).

    One per sub-agent, shared by all its ``as_tool()`` tools.

    Attributes:
        core: The sub-agent's state: its interrupts and its answer checks.
        attach: Keeps the sub-agent's session under the parent's (the parent handle).
        kept_under: Whether the sub-agent's session is the one kept under the parent's.
        tree: The ids and names of the sub-agent's own sub-agents, at every depth.
        owner: The parent call the sub-agent's suspended run belongs to, if known.
        verified: The records the sub-agent's checks verified for a parent, by interrupt id.
        busy: The parent call running the sub-agent now, if any.
    """

    __slots__ = ("__weakref__", "attach", "busy", "core", "kept_under", "owner", "tree", "verified")

    def __init__(
        self,
        core: AgentCore,
        attach: Callable[[object], None],
        kept_under: Callable[[object], bool],
        tree: Sequence[tuple[str, str]],
    ) -> None:
        self.core: AgentCore = core
        self.attach: Callable[[object], None] = attach
        self.kept_under: Callable[[object], bool] = kept_under
        self.tree: tuple[tuple[str, str], ...] = tuple(tree)
        self.owner: _Owner | None = None
        self.verified: dict[str, Any] = {}
        self.busy: str | None = None

    def suspended_in(self, parent: object, tool_use_id: str) -> bool:
        """Whether the sub-agent's suspended run is *parent*'s call *tool_use_id*."""
        owner = self.owner
        if owner is not None and owner.state is self.core.interrupts:
            return owner.parent() is parent and owner.tool_use_id == tool_use_id
        # Not suspended by a call in this process: only a run reloaded from the session
        # kept under the parent's is the parent's.
        return self.kept_under(parent)

    def suspend(self, parent: object, tool_use_id: str) -> None:
        """Record that the sub-run stopped in *parent*'s call *tool_use_id*."""
        self.owner = _Owner(parent, tool_use_id, self.core.interrupts)
        _SUSPENDED.add(self)

    def release(self) -> None:
        """The sub-run ended: it belongs to no call any more."""
        self.owner = None
        self.verified.clear()
        _SUSPENDED.discard(self)

    def suspended_for(self, parent: object) -> bool:
        """Whether the sub-run is suspended in one of *parent*'s calls."""
        owner = self.owner
        return owner is not None and owner.parent() is parent

    def waits_on(self, interrupt_id: str) -> Interrupt | None:
        """The sub-agent's unanswered interrupt *interrupt_id*, if it waits on it."""
        interrupts = self.core.interrupts
        found = interrupts.interrupts.get(interrupt_id) if interrupts.activated else None
        return found if found is not None and not found.answered else None

    def check_for(self, interrupt_id: str) -> AnswerCheck | None:
        """The sub-agent's own check of answers to *interrupt_id* (its policy's), if any."""
        return next((c for c in self.core.answer_checks if c.owns(interrupt_id)), None)


@final
class AgentAsTool:
    """An agent run as a tool of another agent; made by ``agent.as_tool()``.

    It is an ``AgentTool``: pass it in the parent's ``tools=[...]``; build it with
    ``as_tool()``, not with this constructor. The agents guide's "Agents as tools" describes
    how its events, interrupts, cancel and session reach the parent.
    """

    __slots__ = (
        "_agent",
        "_description",
        "_initial_messages",
        "_initial_state",
        "_link",
        "_name",
        "_output_type",
        "_preserve_context",
    )

    def __init__(
        self,
        agent: Agent,
        link: SubAgentLink,
        *,
        name: str,
        description: str,
        preserve_context: bool,
        output_type: type[Any] | None,
    ) -> None:
        self._agent = agent
        self._link = link
        self._name = name
        self._description = description
        self._preserve_context = preserve_context
        self._output_type = output_type
        self._initial_messages: Messages = copy.deepcopy(agent.messages)
        self._initial_state: dict[str, Any] = agent.state.get()

    @property
    def agent(self) -> Agent:
        """The agent this tool runs."""
        return self._agent

    @property
    def link(self) -> SubAgentLink:
        """The host's side of the sub-agent (its interrupts, checks and suspended run)."""
        return self._link

    @property
    def tool_name(self) -> str:
        """The name the parent's model calls the sub-agent by."""
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        """One string parameter, ``input``: what the parent's model asks the sub-agent."""
        return {
            "name": self._name,
            "description": self._description,
            "inputSchema": {"json": copy.deepcopy(_INPUT_SCHEMA)},
        }

    async def stream(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        """Run the sub-agent for the parent's call *tool_use*; see the module docstring."""
        tool_use_id = tool_use["toolUseId"]
        link = self._link
        if link.busy is not None:
            yield ToolResultEvent(
                tool_result=error_result(
                    tool_use_id,
                    f"The agent {self._name!r} is already answering another call; an agent "
                    "answers one call at a time, so call it again once that call returned.",
                )
            )
            return
        caller = context.agent.agent_id
        clash = next((name for i, name in link.tree if i == caller), None)
        if caller == self._agent.agent_id or clash is not None:
            yield ToolResultEvent(
                tool_result=error_result(
                    tool_use_id,
                    f"The agent {self._name!r} cannot run here: "
                    f"{'it' if clash is None else f'its sub-agent {clash!r}'} has the "
                    f"agent_id {caller!r} of the agent calling it, so their interrupt ids "
                    "would be one; give each agent its own agent_id.",
                )
            )
            return
        link.busy = tool_use_id
        try:
            async for event in self._run(tool_use, context):
                yield event
        finally:
            link.busy = None

    async def _run(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        agent, link = self._agent, self._link
        link.attach(context.agent)
        prompt: str | None
        if link.core.interrupts.activated:
            if not link.suspended_in(context.agent, tool_use["toolUseId"]):
                yield ToolResultEvent(
                    tool_result=error_result(
                        tool_use["toolUseId"],
                        f"The agent {self._name!r} is waiting for an answer in another call; "
                        "it takes a new request once that call is answered.",
                    )
                )
                return
            # A replay of the call the sub-agent stopped in: pass on the parent's answers.
            waiting = self._pass_answers(context)
            if waiting:
                yield ToolInterruptEvent(tool_use=tool_use, interrupts=waiting)
                return
            prompt = None
        else:
            prompt = _prompt_of(tool_use)
            if not self._preserve_context:
                agent.messages = copy.deepcopy(self._initial_messages)
                link.core.state = AgentState(self._initial_state)
        signal = context.cancel_signal
        if isinstance(signal, CancelToken):
            signal.add_listener(agent.cancel)
        try:
            result: AgentResult[Any] | None = None
            events = (
                agent.stream_async(prompt)
                if self._output_type is None
                else agent.stream_async(prompt, output_type=self._output_type)
            )
            async with aclosing(events):
                async for event in events:
                    if isinstance(event, AgentResultEvent):
                        result = event.result
                    else:
                        yield ToolStreamEvent(tool_use=tool_use, data=event)
        finally:
            if isinstance(signal, CancelToken):
                signal.remove_listener(agent.cancel)
        assert result is not None  # a finished stream ends with its result
        if result.stop_reason == "interrupt":
            link.suspend(context.agent, tool_use["toolUseId"])
            yield ToolInterruptEvent(
                tool_use=tool_use, interrupts=[_copy(i) for i in result.interrupts]
            )
            return
        link.release()
        yield ToolResultEvent(tool_result=self._result(tool_use["toolUseId"], result))

    def _pass_answers(self, context: ToolContext) -> list[Interrupt]:
        """Hand the answers the parent recorded to the sub-agent; return what still waits."""
        link = self._link
        waiting: list[Interrupt] = []
        for interrupt in link.core.interrupts.pending():
            answered = context.answered(interrupt.id)
            if answered is None:
                waiting.append(_copy(interrupt))
                continue
            if link.check_for(interrupt.id) is not None:
                # Only a record the sub-agent's own check verified (SubAgentAnswers) passes:
                # one the parent stored raw could say anything, a forged approval included.
                verified = link.verified.pop(interrupt.id, _UNVERIFIED)
                if verified is _UNVERIFIED or verified != answered.response:
                    waiting.append(_copy(interrupt))
                    continue
            interrupt.response = copy.deepcopy(answered.response)
        return waiting

    def _result(self, tool_use_id: str, result: AgentResult[Any]) -> ToolResult:
        reason = result.stop_reason
        if reason == "cancelled":
            return error_result(tool_use_id, f"The agent {self._name!r} was cancelled.")
        if reason not in _ANSWERED:
            return error_result(
                tool_use_id,
                f"The agent {self._name!r} stopped without an answer (stop reason {reason!r}).",
            )
        output: object = result.structured_output
        if self._output_type is not None and output is None:
            return error_result(
                tool_use_id,
                f"The agent {self._name!r} produced no structured output (stop reason {reason!r}).",
            )
        if output is not None:
            dump = getattr(output, "model_dump", None)
            data = dump(mode="json") if callable(dump) else copy.deepcopy(output)
            return {"toolUseId": tool_use_id, "status": "success", "content": [{"json": data}]}
        return {"toolUseId": tool_use_id, "status": "success", "content": [{"text": str(result)}]}

    def __repr__(self) -> str:
        return f"AgentAsTool(name={self._name!r}, agent_id={self._agent.agent_id!r})"


@final
class SubAgentAnswers:
    """The parent's check of answers to its sub-agents' interrupts (an ``AnswerCheck``).

    It owns an id a sub-agent waits on, and has that sub-agent's own check (its policy's
    ``ApprovalCheck``, with its authenticator) verify the answer, so an approval answered
    through the parent is identity-checked as if answered to the sub-agent. An answer to an
    interrupt of the sub-agent that no check of its owns is stored as given. The sub-agents
    are looked for when an answer comes: among the parent's tools then (a tool provider's
    included), and among the sub-agents suspended in a call of the parent.
    """

    __slots__ = ("_current", "_parent", "_tools")

    def __init__(self, parent: object, tools: Callable[[], Sequence[object]]) -> None:
        self._parent = parent
        self._tools = tools
        # The sub-agent and id owns() last said yes to: InterruptState.resume asks owns()
        # for an id, then decision() and describe() for the same id, with no id to pass.
        self._current: tuple[SubAgentLink, str] | None = None

    def _links(self) -> list[SubAgentLink]:
        links = [tool.link for tool in self._tools() if isinstance(tool, AgentAsTool)]
        links.extend(
            link
            for link in list(_SUSPENDED)
            if link.suspended_for(self._parent) and link not in links
        )
        return links

    def _owner(self, interrupt_id: str) -> SubAgentLink | None:
        for link in self._links():
            # Loads a sub-agent's stored session first: after a restart it is there.
            link.attach(self._parent)
            if link.waits_on(interrupt_id) is not None:
                return link
        return None

    def owns(self, interrupt_id: str) -> bool:
        """Whether a sub-agent of the parent waits on *interrupt_id*."""
        link = self._owner(interrupt_id)
        self._current = None if link is None else (link, interrupt_id)
        return link is not None

    def stale(
        self, interrupt_id: str, response: Any, registered: Mapping[str, Interrupt]
    ) -> str | None:
        """Never: an id a sub-agent waits on that its parent did not register is unknown."""
        return None

    def verify(self, interrupt_id: str, response: Any, interrupt: Interrupt) -> Any:
        """The sub-agent's record for *response*, verified by the sub-agent's own check."""
        link = self._owner(interrupt_id)
        if link is None:
            return response
        asked = link.waits_on(interrupt_id)
        check = link.check_for(interrupt_id)
        if check is None or asked is None:
            record = response
        else:
            record = check.verify(interrupt_id, response, asked)
        # What the tool may hand the sub-agent on the replay (and nothing else for this id).
        link.verified[interrupt_id] = copy.deepcopy(record)
        return record

    def lapsed(self, interrupt: Interrupt) -> Any:
        """Never here: a sub-agent's approval times out when the sub-agent itself is
        continued; through its parent it waits for an answer."""
        return None

    def decision(self, record: Any) -> object:
        """What two records must share to be the same answer, as the sub-agent's check says."""
        check = self._current_check()
        return record if check is None else check.decision(record)

    def describe(self, record: Any) -> str:
        """Who answered what, as the sub-agent's check says."""
        check = self._current_check()
        return f"answered {record!r}" if check is None else check.describe(record)

    def _current_check(self) -> AnswerCheck | None:
        if self._current is None:
            return None
        link, interrupt_id = self._current
        return link.check_for(interrupt_id)


_UNVERIFIED: Final = object()


def _prompt_of(tool_use: ToolUse) -> str:
    """The call's ``input`` string (a model that sent something else gets it as text)."""
    tool_input: object = tool_use["input"]
    if isinstance(tool_input, dict):
        value: object = cast("dict[str, object]", tool_input).get("input", "")
        return value if isinstance(value, str) else str(value)
    return tool_input if isinstance(tool_input, str) else str(tool_input)


def _copy(interrupt: Interrupt) -> Interrupt:
    """A copy for the parent's state: the two states must not share one mutable record."""
    return Interrupt(
        id=interrupt.id,
        name=interrupt.name,
        reason=copy.deepcopy(interrupt.reason),
        response=copy.deepcopy(interrupt.response),
    )
