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
  resume, ``SubAgentAnswers`` (an ``AnswerCheck`` the parent installs first) recognises the
  ids a sub-agent waits on and has the sub-agent's own checks verify each answer (a policy
  approval is identity-checked by the sub-agent's policy); the parent stores the verified
  record. When the parent replays the call, the tool hands each record to the sub-agent,
  which continues where it stopped; one it did not get an answer for is surfaced again.
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

__all__ = ["AgentAsTool", "SubAgentAnswers", "SubAgentLink"]

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

    Attributes:
        core: The sub-agent's state: its interrupts and its answer checks.
        attach: Keeps the sub-agent's session under the parent's (the parent handle).
    """

    __slots__ = ("attach", "core")

    def __init__(self, core: AgentCore, attach: Callable[[object], None]) -> None:
        self.core: AgentCore = core
        self.attach: Callable[[object], None] = attach

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
    ``as_tool()``, not with this constructor. The module docstring of
    ``stageware._host._agent_as_tool`` and the README's "Agents as tools" describe how its
    events, interrupts, cancel and session reach the parent.
    """

    __slots__ = (
        "_agent",
        "_busy",
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
        self._busy: str | None = None

    @property
    def agent(self) -> Agent:
        """The agent this tool runs."""
        return self._agent

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
        if self._busy is not None:
            yield ToolResultEvent(
                tool_result=error_result(
                    tool_use_id,
                    f"The agent {self._name!r} is already answering another call; an agent "
                    "answers one call at a time, so call it again once that call returned.",
                )
            )
            return
        self._busy = tool_use_id
        try:
            async for event in self._run(tool_use, context):
                yield event
        finally:
            self._busy = None

    async def _run(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        agent, link = self._agent, self._link
        link.attach(context.agent)
        prompt: str | None
        if link.core.interrupts.activated:
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
            yield ToolInterruptEvent(
                tool_use=tool_use, interrupts=[_copy(i) for i in result.interrupts]
            )
            return
        yield ToolResultEvent(tool_result=self._result(tool_use["toolUseId"], result))

    def _pass_answers(self, context: ToolContext) -> list[Interrupt]:
        """Hand the answers the parent recorded to the sub-agent; return what still waits."""
        interrupts = self._link.core.interrupts
        waiting: list[Interrupt] = []
        for interrupt in interrupts.pending():
            answered = context.answered(interrupt.id)
            if answered is None:
                waiting.append(_copy(interrupt))
            else:
                # Verified when the parent stored it (SubAgentAnswers), by the sub-agent's
                # own check: the record is what the sub-agent would have stored itself.
                interrupt.response = copy.deepcopy(answered.response)
        return waiting

    def _result(self, tool_use_id: str, result: AgentResult[Any]) -> ToolResult:
        if result.stop_reason == "cancelled":
            return error_result(tool_use_id, f"The agent {self._name!r} was cancelled.")
        output: object = result.structured_output
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
    interrupt of the sub-agent that no check of its owns is stored as given.
    """

    __slots__ = ("_current", "_links", "_parent")

    def __init__(self, parent: object, links: Sequence[SubAgentLink]) -> None:
        self._parent = parent
        self._links = tuple(links)
        # The sub-agent and id owns() last said yes to: InterruptState.resume asks owns()
        # for an id, then decision() and describe() for the same id, with no id to pass.
        self._current: tuple[SubAgentLink, str] | None = None

    def _owner(self, interrupt_id: str) -> SubAgentLink | None:
        for link in self._links:
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
            return response
        return check.verify(interrupt_id, response, asked)

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
