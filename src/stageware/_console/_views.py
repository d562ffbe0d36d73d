"""What the console's pages show, read from the store: plain values for the templates.

Every listing is one page of the store's ledger (``SessionStore.approvals``) or of its
escalations, found by the store's indexes and paged by its cursors: nothing here loads
every session. Only an approval's own page loads its session, for the conversation that
led to it, and shows the last ``CONVERSATION_MESSAGES`` messages of it.

Everything shown is data a model, a tool or an end user may have written; the templates
escape it (autoescape), and JSON is shown as indented text, never as markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, cast, final

from stageware._policy._identity import Approver, may_answer

if TYPE_CHECKING:
    from stageware._host.sessions import ApprovalEntry, Escalation

__all__ = [
    "CONVERSATION_MESSAGES",
    "ApprovalView",
    "Block",
    "EscalationView",
    "Turn",
    "age",
    "approval_view",
    "conversation",
    "escalation_view",
    "older_than",
    "pretty",
    "who_may",
]

CONVERSATION_MESSAGES: Final = 30
"""How many of the last messages an approval's page shows."""


@final
@dataclass(frozen=True, slots=True)
class ApprovalView:
    """An approval as the pages show it."""

    entry: ApprovalEntry
    question: str
    step: str
    tool: str | None
    tool_input: str | None
    request: str | None
    request_turns: tuple[Turn, ...]
    details: str | None
    approvers: tuple[str, ...] | None
    deadline: str | None
    on_timeout: str | None
    age: str
    acts_for: str
    """Whom the run acts for (its principal), in words."""

    @property
    def who_may(self) -> str:
        """Who may answer, in words."""
        return who_may(self.approvers)

    def may_answer(self, approver: Approver) -> bool:
        """Whether *approver* may answer it (the ``Suspend``'s rule; pending or not)."""
        return may_answer(approver, self.approvers)


@final
@dataclass(frozen=True, slots=True)
class EscalationView:
    """An escalation as the pages show it."""

    escalation: Escalation
    event: str
    age: str


@final
@dataclass(frozen=True, slots=True)
class Block:
    """One content block of a message: ``kind`` is text, tool-use, tool-result or other."""

    kind: str
    text: str
    name: str | None = None
    status: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation."""

    role: str
    blocks: tuple[Block, ...]


def pretty(value: object) -> str:
    """*value* as indented JSON (non-ASCII kept), for a ``<pre>``."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def who_may(approvers: Sequence[str] | None) -> str:
    """*approvers* in words: ``None`` is any verified approver."""
    return "any verified approver" if approvers is None else ", ".join(sorted(approvers))


def age(since: datetime, now: datetime | None = None) -> str:
    """How long ago *since* was, in its largest unit: ``42s``, ``5m``, ``3h``, ``2d``."""
    seconds = max(0, int(((now or datetime.now(UTC)) - since).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def approval_view(entry: ApprovalEntry, now: datetime | None = None) -> ApprovalView:
    """What *entry*'s reason says, read defensively: it is whatever the ``Suspend`` stored."""
    reason: Mapping[str, Any] = entry.reason
    question = reason.get("reason")
    step = reason.get("step")
    tool = tool_input = request = None
    turns: list[Turn] = []
    if isinstance(step, dict):
        fields = cast(dict[str, Any], step)
        if isinstance(fields.get("tool"), str) and "input" in fields:
            tool, tool_input = cast(str, fields["tool"]), pretty(fields["input"])
        elif isinstance(fields.get("input"), list):
            # An input hook's step: the messages the user sent.
            request = "The input the user sent"
            turns, _ = conversation(cast(list[Mapping[str, Any]], fields["input"]))
        elif isinstance(fields.get("messages"), list):
            # A model hook's step: the request about to go to the model.
            model = fields.get("model_id")
            request = f"The request to the model {model}" if model else "The request"
            turns, _ = conversation(cast(list[Mapping[str, Any]], fields["messages"]))
    approvers = reason.get("approvers")
    deadline = reason.get("deadline")
    then = reason.get("on_timeout")
    on_timeout = None
    if isinstance(deadline, str):
        outcome = cast(dict[str, Any], then).get("outcome") if isinstance(then, dict) else None
        on_timeout = outcome if isinstance(outcome, str) else "block"
    details = reason.get("details")
    return ApprovalView(
        entry=entry,
        question=question if isinstance(question, str) else pretty(dict(reason)),
        step=pretty(cast(object, step)),
        tool=tool,
        tool_input=tool_input,
        request=request,
        request_turns=tuple(turns),
        details=None if details is None else pretty(details),
        approvers=(
            None
            if not isinstance(approvers, list)
            else tuple(str(a) for a in cast(list[object], approvers))
        ),
        deadline=deadline if isinstance(deadline, str) else None,
        on_timeout=on_timeout,
        age=age(entry.asked_at, now),
        acts_for=_acts_for(reason),
    )


def _acts_for(reason: Mapping[str, Any]) -> str:
    if "principal" not in reason:
        return "not recorded"
    principal = reason["principal"]
    if not isinstance(principal, dict):
        return "nobody named (the application passed no principal)"
    fields = cast(dict[str, Any], principal)
    roles = fields.get("roles")
    names = [str(r) for r in cast(list[object], roles)] if isinstance(roles, list) else []
    return f"{fields.get('id')}" + (f" ({', '.join(names)})" if names else "")


def escalation_view(escalation: Escalation, now: datetime | None = None) -> EscalationView:
    """*escalation* with its event as indented JSON."""
    return EscalationView(escalation, pretty(escalation.event), age(escalation.created_at, now))


def conversation(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Turn], int]:
    """The last ``CONVERSATION_MESSAGES`` of *messages* as turns, and how many were left out."""
    shown = messages[-CONVERSATION_MESSAGES:]
    turns = [
        Turn(str(message.get("role", "?")), tuple(_blocks(message.get("content"))))
        for message in shown
    ]
    return turns, len(messages) - len(shown)


def _blocks(content: object) -> list[Block]:
    if not isinstance(content, list):
        return [Block("other", pretty(content))]
    blocks: list[Block] = []
    for item in cast(list[object], content):
        if not isinstance(item, dict):
            blocks.append(Block("other", pretty(item)))
            continue
        block = cast(dict[str, Any], item)
        if isinstance(block.get("text"), str):
            blocks.append(Block("text", block["text"]))
        elif isinstance(block.get("toolUse"), dict):
            use = cast(dict[str, Any], block["toolUse"])
            blocks.append(Block("tool-use", pretty(use.get("input")), name=str(use.get("name"))))
        elif isinstance(block.get("toolResult"), dict):
            result = cast(dict[str, Any], block["toolResult"])
            blocks.append(
                Block(
                    "tool-result",
                    _result_text(result.get("content")),
                    name=str(result.get("toolUseId")),
                    status=str(result.get("status")),
                )
            )
        else:
            blocks.append(Block("other", pretty(block)))
    return blocks


def _result_text(content: object) -> str:
    if not isinstance(content, list):
        return pretty(content)
    parts: list[str] = []
    for item in cast(list[object], content):
        part = cast(dict[str, Any], item) if isinstance(item, dict) else {}
        text = part.get("text")
        parts.append(text if isinstance(text, str) else pretty(part.get("json", item)))
    return "\n".join(parts)


def older_than(minutes: int | None, now: datetime | None = None) -> datetime | None:
    """The time before which an item is older than *minutes*; ``None`` for no bound."""
    if minutes is None:
        return None
    return (now or datetime.now(UTC)) - timedelta(minutes=minutes)
