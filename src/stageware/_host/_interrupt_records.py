"""The stored shape of the interrupt state, as pydantic models that check a session's copy.

Apart from ``_interrupt_state`` so that building these models (and importing pydantic) is
paid when a session restores interrupt state, not by ``import stageware``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stageware._generated.payloads import Message, ToolResult

__all__ = ["StoredInterruptState"]


class StoredInterrupt(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    reason: Any = None
    response: Any = None
    agent_stream: bool = False


class StoredPending(BaseModel):
    # No extra="forbid" here: it would reach into the payload TypedDicts, which allow the
    # extra keys a tool's own result blocks may carry (the session store does too).
    tool_use_message: Message
    completed: dict[str, ToolResult]


class StoredInput(BaseModel):
    # No extra="forbid", for the same reason as StoredPending.
    messages: list[Message]


class StoredRelease(BaseModel):
    """The final save of a durable invocation (``_journal_session``)."""

    # No extra="forbid": it would reach into the message's payload TypedDict.
    key: str
    stop_reason: str | None = None
    message_at: int | None = Field(default=None, ge=0)
    message: Message | None = None
    error: str | None = None


class StoredInterruptState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    activated: bool
    interrupts: list[StoredInterrupt]
    pending_tool_execution: StoredPending | None
    # Absent from snapshots written before agent-stream gates kept the pass's input.
    pending_input: StoredInput | None = None
    # Absent from snapshots written before answers were bound to the interrupt cycle.
    cycle: int = Field(default=0, ge=0)
    # The fingerprint of a structured run's output; absent from older snapshots.
    output: str | None = None
    # Only in the final save of a durable invocation, until the next claim.
    released_by: StoredRelease | None = None
