"""What a durable invocation leaves in its session, read back when its journal replays it.

The session store holds the conversation between invocations; during one, the journal
holds each model and tool call's result (``_journal``). An invocation claimed while a
journal is current differs from any other in three ways (``_session``):

- its lease's owner names the journal's key (``lease_owner``): the worker's own name,
  unique as always, then ``|`` and the key. A live lease still keeps every other worker
  out, a replay of the same invocation included; ``leased_by`` tells the replay that
  the lease it finds, once lapsed, is its own claim, to take over with ``agent()`` and no
  prompt (the session holds the claim's input, and nothing else was written since);
- it makes no checkpoint between the claim and the final save;
- its final save records the key and how the invocation ended (``release_record``)
  in the stored interrupt state, as ``released_by``, kept until the next claim (a save
  of an approver's answer keeps it). ``released_by`` reads the key back, and
  ``stored_outcome`` the ending: a replay that finds its own key knows the
  invocation finished, and builds its result from the session instead of running it.

The ending records the stop reason, where the stop's message is (the index of the
history's last message, which it nearly always is, or the message itself when it is not
in the history: a policy's block before the input entered it, a middleware's answer),
and the error the invocation ended with, if any. The pending interrupts are the stored
interrupt state's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast, final

from stageware._generated.events import EventLoopStopEvent
from stageware._generated.payloads import Message
from stageware._runtime import Interrupt

from ._interrupt_state import InterruptState
from .sessions import StoredSession

__all__ = [
    "StoredOutcome",
    "lease_owner",
    "leased_by",
    "release_record",
    "released_by",
    "stored_outcome",
]

_KEY_SEPARATOR = "|"  # never in a host name, nor in the rest of a worker's name


def lease_owner(worker: str, key: str | None) -> str:
    """The lease owner of an invocation by *worker*: its own name, and the journal's *key*."""
    return worker if key is None else f"{worker}{_KEY_SEPARATOR}{key}"


def leased_by(stored: StoredSession, key: str) -> bool:
    """Whether *stored* holds a lease (live or lapsed) of the invocation with journal *key*."""
    lease = stored.lease
    return lease is not None and lease.owner.partition(_KEY_SEPARATOR)[2] == key


def release_record(
    key: str,
    stop: EventLoopStopEvent | None,
    history: list[Message],
    failure: BaseException | None,
    escalation_id: str | None = None,
) -> dict[str, Any]:
    """What the final save of the invocation with journal *key* records of its end.

    *stop* is the stop event the invocation reports (``None`` if it ended without one),
    *history* the agent's messages as saved, *failure* what it ended with, if anything,
    *escalation_id* the escalation the same save records, if the run escalated.
    """
    record: dict[str, Any] = {"key": key}
    if escalation_id is not None:
        record["escalation_id"] = escalation_id
    if stop is not None:
        record["stop_reason"] = stop.stop_reason
        if history and history[-1] == stop.message:
            record["message_at"] = len(history) - 1
        elif stop.message["content"]:
            record["message"] = stop.message
    if failure is not None:
        record["error"] = f"{type(failure).__name__}: {failure}".removesuffix(": ")
    return record


def released_by(stored: StoredSession) -> str | None:
    """The journal key of the durable invocation whose final save *stored* holds, if any."""
    record = stored.snapshot["interrupt_state"].get("released_by")
    return None if record is None else cast("str", record["key"])


@final
@dataclass(frozen=True)
class StoredOutcome:
    """How a durable invocation ended, as its final save recorded it.

    Attributes:
        key: The invocation's journal key.
        stop_reason: The stop reason it reported; ``None`` if it ended with an error.
        message: The stop's message (an empty assistant message if there was none).
        interrupts: The interrupts waiting for an answer since.
        error: ``"<exception class>: <message>"`` if it ended with an error.
        escalation_id: The escalation its final save recorded, if the run escalated.
    """

    key: str
    stop_reason: str | None
    message: Message
    interrupts: list[Interrupt] = field(default_factory=list[Interrupt])
    error: str | None = None
    escalation_id: str | None = None

    @property
    def text(self) -> str:
        """The text blocks of ``message``, joined by newlines, as ``AgentResult.text``."""
        return "\n".join(block["text"] for block in self.message["content"] if "text" in block)


def stored_outcome(stored: StoredSession) -> StoredOutcome | None:
    """The ending the last durable invocation's final save recorded in *stored*, if any.

    Raises:
        InterruptStateError: The stored interrupt state is damaged.
    """
    state = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    record = state.released_by
    if record is None:
        return None
    history = stored.snapshot["messages"]
    message: Message = {"role": "assistant", "content": []}
    at = cast("int | None", record.get("message_at"))
    if at is not None and at < len(history):
        message = history[at]
    elif record.get("message") is not None:
        message = cast("Message", record["message"])
    return StoredOutcome(
        key=record["key"],
        stop_reason=record.get("stop_reason"),
        message=message,
        interrupts=state.pending() if state.activated else [],
        error=record.get("error"),
        escalation_id=record.get("escalation_id"),
    )
