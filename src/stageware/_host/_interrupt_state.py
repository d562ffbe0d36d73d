"""The agent's interrupt state: what is waiting for a human, and for how long answers live.

Three kinds of interrupt share this state. Tool-cycle interrupts (raised by ExecuteTool
middleware, by a tool, or by a BeforeToolCallEvent hook) are registered by the tool
executor; agent-stream interrupts (raised by AgentStream middleware) are registered by
the run loop. Nothing else writes here: ``interrupt()`` on a context only reads.

An agent-stream interrupt raised before the pass's input entered the history (a gate
in front of ``next_fn``, as the AgentStream terminal appends the input) keeps that input
here, and the resume passes it on: the user's turn is neither lost nor recorded twice.

Lifetimes:

- A tool cycle ends when its tools have all run (``end_tool_cycle``): its interrupts and
  the stored tool execution are dropped, but answered agent-stream responses are kept,
  because the gate that asked re-reads its answer on every pass of the interrupt cycle.
- An interrupt cycle ends when a pass finishes with nothing owed a resume
  (``end_interrupt_cycle``): everything is released, so an answer never becomes a
  standing approval for the next time the same gate asks. The cycle counter goes up, so
  an owner that binds its ids to the cycle (the policy layer) asks under new ids.

An approval with a deadline (a policy ``Suspend(timeout=...)``) that nobody answered in
time is answered by its owner's check when the run is continued (``lapse``): the record
says it timed out, and is final like any answer.

An answer is final. Every path that records one (a resume, the command line) goes
through ``resume``, which applies one rule: an interrupt already answered keeps its first
answer; the same decision again changes nothing, a different one is refused
(``InterruptAnsweredError``) and nothing of the resume is stored. The owner of some
interrupts checks their answers first (``AnswerCheck``): it may refuse an answer, and it
returns the record to store in its place.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, final

from stageware._data_paths import format_path
from stageware._generated.payloads import Message, Messages, ToolResult
from stageware._runtime import Interrupt

from .sessions._approval_rows import POLICY_PREFIX
from .sessions._encoding import json_problem

__all__ = [
    "AnswerCheck",
    "InterruptAnsweredError",
    "InterruptState",
    "InterruptStateError",
    "PendingToolExecution",
    "UnknownInterruptError",
    "parse_interrupt_responses",
]


class InterruptStateError(ValueError):
    """Stored interrupt state (from a session) does not have the expected shape."""


class UnknownInterruptError(KeyError):
    """A resume answered an interrupt id that is not registered."""

    def __str__(self) -> str:
        # KeyError would print the message quoted, as if it were a key.
        return str(self.args[0])


class InterruptAnsweredError(ValueError):
    """An answer differs from the one already recorded for the interrupt: the first stands."""


class AnswerCheck(Protocol):
    """How the owner of some interrupts (the policy layer) checks answers before they are
    stored; the host has no idea what an approval is."""

    def owns(self, interrupt_id: str) -> bool:
        """Whether answers to *interrupt_id* are this check's to verify."""
        ...

    def stale(
        self, interrupt_id: str, response: Any, registered: Mapping[str, Interrupt]
    ) -> str | None:
        """Why an owned id that is not registered is stale, if it is; else ``None``. It may
        refuse *response* (``ValueError``) before it says anything about what waits."""
        ...

    def verify(self, interrupt_id: str, response: Any, interrupt: Interrupt) -> Any:
        """The record to store for *response*; raises ``ValueError`` to refuse it."""
        ...

    def lapsed(self, interrupt: Interrupt) -> Any:
        """The record to store for an owned, unanswered interrupt whose time to be
        answered is over (a policy approval past its deadline), or ``None``."""
        ...

    def decision(self, record: Any) -> object:
        """What two records must share to be the same answer."""
        ...

    def describe(self, record: Any) -> str:
        """Who answered what, and when, for a refusal's message."""
        ...


@final
@dataclass
class PendingToolExecution:
    """A tool round halted by an interrupt, kept so a resume replays it without the model.

    Attributes:
        tool_use_message: The assistant message whose tool calls are being executed; it is
            already in the history.
        completed: Results of the calls that finished, by toolUseId; they are not re-run.
    """

    tool_use_message: Message
    completed: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])


def parse_interrupt_responses(prompt: object) -> list[tuple[str, Any]] | None:
    """Return ``(interrupt id, response)`` pairs if *prompt* is a resume, else ``None``.

    A resume is a non-empty list (or other sequence) whose items are all
    ``{"interruptResponse": {...}}``.

    Raises:
        TypeError: If the list mixes interrupt responses with other content, or an item
            lacks ``interruptId`` / ``response``.
    """
    if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence) or not prompt:
        return None
    items = list(cast("Sequence[object]", prompt))
    marked = [isinstance(item, dict) and "interruptResponse" in item for item in items]
    if not any(marked):
        return None
    if not all(marked):
        raise TypeError(
            "a resume prompt must contain only {'interruptResponse': {...}} items; "
            f"item {marked.index(False)} is something else"
        )
    pairs: list[tuple[str, Any]] = []
    for index, item in enumerate(cast("list[dict[str, object]]", items)):
        body = item["interruptResponse"]
        if not isinstance(body, dict) or "interruptId" not in body or "response" not in body:
            raise TypeError(
                f"prompt[{index}]['interruptResponse'] must be a dict with 'interruptId' and "
                f"'response', got {_shape(item['interruptResponse'])}"
            )
        fields = cast("dict[str, object]", body)
        interrupt_id = fields["interruptId"]
        if not isinstance(interrupt_id, str):
            raise TypeError(
                f"prompt[{index}]['interruptResponse']['interruptId'] must be a str, got "
                f"{type(interrupt_id).__name__}"
            )
        pairs.append((interrupt_id, fields["response"]))
    return pairs


def _shape(body: object) -> str:
    """What *body* is, without its values: a response may carry an approver's credential,
    and an error message ends up in logs and in front of whoever sent the prompt."""
    if not isinstance(body, dict):
        return f"a {type(body).__name__}"
    keys = ", ".join(
        f"{key!r}: {type(value).__name__}" if isinstance(key, str) else type(key).__name__
        for key, value in cast("dict[object, object]", body).items()
    )
    return f"a dict with keys {{{keys}}}"


@final
class InterruptState:
    """Registered interrupts, their answers and the tool round waiting to be replayed.

    Attributes:
        interrupts: Registered interrupts by id, with the human's responses once resumed.
        activated: Whether the agent stopped on an interrupt and the cycle is still open;
            while it is, the next invocation must be a resume.
        pending_tool_execution: The tool round to replay on resume, if a tool-cycle
            interrupt halted one.
        pending_input: The input of a pass an agent-stream interrupt stopped before the
            input entered the history; the resume's input. Empty otherwise.
        cycle: How many interrupt cycles have ended; kept with the session.
        output: The fingerprint of the output a structured run that stopped on an
            interrupt asked for (``_structured_output.schema_fingerprint``), which its
            resume must ask for again; ``None`` for a plain run.
        released_by: What the final save of a durable invocation records of its end
            (``_journal_session``), JSON data kept as it is until the next claim, so that
            a save between two invocations (an approver's answer) keeps it; ``None``
            otherwise.
    """

    __slots__ = (
        "_agent_stream_ids",
        "activated",
        "cycle",
        "interrupts",
        "output",
        "pending_input",
        "pending_tool_execution",
        "released_by",
    )

    def __init__(self) -> None:
        self.interrupts: dict[str, Interrupt] = {}
        self.activated: bool = False
        self.pending_tool_execution: PendingToolExecution | None = None
        self.pending_input: Messages = []
        self.cycle: int = 0
        self.output: str | None = None
        self.released_by: dict[str, Any] | None = None
        # Which interrupts the run loop registered: their answers outlive a tool cycle.
        self._agent_stream_ids: set[str] = set()

    def register(self, interrupt: Interrupt, *, agent_stream: bool = False) -> None:
        """Record a raised interrupt. Only the executor and the run loop call this.

        Args:
            interrupt: The interrupt, unanswered.
            agent_stream: Whether AgentStream middleware raised it (the run loop's
                registrations), rather than the tool cycle.
        """
        self.interrupts[interrupt.id] = interrupt
        if agent_stream:
            self._agent_stream_ids.add(interrupt.id)

    def activate(self) -> None:
        """Mark the agent as stopped on an interrupt: the next invocation must resume."""
        self.activated = True

    def pending(self) -> list[Interrupt]:
        """The registered interrupts still waiting for an answer."""
        return [i for i in self.interrupts.values() if not i.answered]

    def answered(self) -> dict[str, Interrupt]:
        """The answered interrupts, by id: what ``interrupt()`` calls resolve against."""
        return {i.id: i for i in self.interrupts.values() if i.answered}

    def pass_snapshot(self) -> dict[str, Interrupt]:
        """The answers an agent-stream context of a new pass may read.

        Empty unless a cycle is open: a leftover response from an abandoned cycle must not
        resolve a gate that should be asking.
        """
        return self.answered() if self.activated else {}

    def resume(
        self, responses: Sequence[tuple[str, Any]], checks: Sequence[AnswerCheck] = ()
    ) -> list[str]:
        """Store the human's answers for a resume; return the ids newly answered.

        All or nothing: a refused answer stores none of *responses*. An interrupt answered
        before keeps its first answer (see the module docstring).

        Args:
            checks: The owners' checks; an answer to an id a check owns is verified by it,
                and its record is what is stored.

        Raises:
            RuntimeError: If nothing is waiting for an answer.
            UnknownInterruptError: A ``KeyError``, if an id names no registered interrupt.
            InterruptAnsweredError: A ``ValueError``, if an interrupt was answered before
                with a different decision.
            ValueError: If a response is ``None``, which would read as "not answered", is
                not JSON data, or answers an interrupt already answered in *responses*, or
                a check refused it, or answers a policy approval (``v2:policy:``) that no
                check owns.
        """
        if not self.activated:
            raise RuntimeError(
                "received interrupt responses, but the agent is not waiting for any; "
                "pass a prompt instead"
            )
        seen: set[str] = set()
        records: list[tuple[str, Any]] = []
        for interrupt_id, response in responses:
            if interrupt_id in seen:
                raise ValueError(
                    f"interrupt {interrupt_id!r} is answered twice in one resume; give each "
                    "interrupt one answer (which one was meant is not for the agent to guess)"
                )
            seen.add(interrupt_id)
            check = next((c for c in checks if c.owns(interrupt_id)), None)
            if interrupt_id not in self.interrupts:
                stale = (
                    None if check is None else check.stale(interrupt_id, response, self.interrupts)
                )
                if stale is not None:
                    raise ValueError(stale)
                raise UnknownInterruptError(self._unknown(interrupt_id, checks))
            if check is None and interrupt_id.startswith(POLICY_PREFIX):
                # Stored unverified, an answer shaped like the policy's record would read
                # as a verified approver in the ledger and the audit.
                raise ValueError(
                    f"interrupt {interrupt_id!r} is a policy approval, and this agent has no "
                    "policy to verify its answer; resume the session with the agent's "
                    "PolicyEngine"
                )
            if response is None:
                raise ValueError(
                    f"the response for interrupt {interrupt_id!r} is None; an answer must be a "
                    "value (None means unanswered)"
                )
            problem = json_problem(response, "the response")
            if problem is not None:
                raise ValueError(
                    f"cannot answer interrupt {interrupt_id!r}: {problem}; an answer must be "
                    "JSON data, to be kept with the session"
                )
            interrupt = self.interrupts[interrupt_id]
            record = response if check is None else check.verify(interrupt_id, response, interrupt)
            if interrupt.answered:
                first = interrupt.response
                same = (
                    first == record
                    if check is None
                    else check.decision(first) == check.decision(record)
                )
                if not same:
                    told = f"answered {first!r}" if check is None else check.describe(first)
                    raise InterruptAnsweredError(
                        f"interrupt {interrupt_id!r} was already {told}; an answer is final, "
                        "so a different one is refused and nothing ran"
                    )
                continue  # the same answer again: the first record stands
            records.append((interrupt_id, record))
        for interrupt_id, record in records:
            self.interrupts[interrupt_id].response = record
        return [interrupt_id for interrupt_id, _ in records]

    def lapse(self, checks: Sequence[AnswerCheck]) -> list[str]:
        """Store, for each waiting interrupt whose owner says its time is over, the record
        the owner gives in the answer's place; return those ids.

        Called when a run is continued (no prompt, or a resume): the record is final like
        any answer, and a later answer to the same interrupt is refused by its check.
        """
        lapsed: list[str] = []
        for interrupt in self.pending():
            check = next((c for c in checks if c.owns(interrupt.id)), None)
            record = None if check is None else check.lapsed(interrupt)
            if record is not None:
                interrupt.response = record
                lapsed.append(interrupt.id)
        return lapsed

    def _unknown(self, interrupt_id: str, checks: Sequence[AnswerCheck]) -> str:
        """The message for an unregistered *interrupt_id*. The ids a check owns (policy
        approvals) are not listed: the prompt sender is not told what waits for an
        approver; the application can ask ``agent.pending_interrupts``."""
        others = sorted(i for i in self.interrupts if not any(c.owns(i) for c in checks))
        listed = f" (the application's: {', '.join(others)})" if others else ""
        return (
            f"no interrupt with id {interrupt_id!r} is registered{listed}; what waits is "
            "listed by agent.pending_interrupts, `stageware policy approvals` or "
            "`stageware console`"
        )

    def end_tool_cycle(self) -> None:
        """Close the finished tool round: drop its interrupts and deactivate.

        Answered agent-stream responses are kept for the rest of the interrupt cycle, but
        with the state deactivated a new pass reads them only if a resume re-activates it:
        a cycle the caller abandoned after this point leaves nothing a gate could read.
        """
        self.interrupts = {
            i.id: i
            for i in self.interrupts.values()
            if i.answered and i.id in self._agent_stream_ids
        }
        self._agent_stream_ids = set(self.interrupts)
        self.pending_tool_execution = None
        self.activated = False

    def end_interrupt_cycle(self) -> None:
        """Release everything: the cycle is over and no answer may outlive it."""
        self.interrupts = {}
        self._agent_stream_ids = set()
        self.pending_tool_execution = None
        self.pending_input = []
        self.activated = False
        self.output = None
        self.cycle += 1

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON data, for a session store."""
        pending = self.pending_tool_execution
        state: dict[str, Any] = {
            "activated": self.activated,
            "interrupts": [
                {
                    "id": i.id,
                    "name": i.name,
                    "reason": copy.deepcopy(i.reason),
                    "response": copy.deepcopy(i.response),
                    "agent_stream": i.id in self._agent_stream_ids,
                }
                for i in self.interrupts.values()
            ],
            "pending_tool_execution": None
            if pending is None
            else {
                "tool_use_message": copy.deepcopy(pending.tool_use_message),
                "completed": copy.deepcopy(pending.completed),
            },
            "pending_input": {"messages": copy.deepcopy(self.pending_input)}
            if self.pending_input
            else None,
            "cycle": self.cycle,
        }
        if self.output is not None:
            # Only when set: a plain run's snapshot stays as it was before structured runs.
            state["output"] = self.output
        if self.released_by is not None:
            state["released_by"] = copy.deepcopy(self.released_by)
        return state

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InterruptState:
        """Rebuild the state :meth:`to_dict` produced.

        Raises:
            InterruptStateError: Naming the field that does not fit.
        """
        # Imported here: the models, and pydantic, load only when a session restores state.
        from pydantic import ValidationError

        from ._interrupt_records import StoredInterruptState

        try:
            stored = StoredInterruptState.model_validate(data)
        except ValidationError as error:
            problem = error.errors()[0]
            where = format_path(("interrupt_state", *problem["loc"]))
            raise InterruptStateError(f"{where}: {problem['msg']}") from error
        state = cls()
        state.activated = stored.activated
        state.cycle = stored.cycle
        state.output = stored.output
        for i in stored.interrupts:
            state.register(
                Interrupt(id=i.id, name=i.name, reason=i.reason, response=i.response),
                agent_stream=i.agent_stream,
            )
        if stored.pending_tool_execution is not None:
            # The stored data itself, once checked: pydantic's copy of a TypedDict drops
            # keys the payload schema does not declare, and a result's extra keys are data.
            pending: dict[str, Any] = copy.deepcopy(data["pending_tool_execution"])
            state.pending_tool_execution = PendingToolExecution(
                tool_use_message=pending["tool_use_message"], completed=pending["completed"]
            )
        if stored.pending_input is not None:
            # Like the tool round: the stored messages themselves, extra keys included.
            state.pending_input = copy.deepcopy(data["pending_input"]["messages"])
        if stored.released_by is not None:
            state.released_by = copy.deepcopy(data["released_by"])
        return state
