"""Choosing the part of a conversation to send: the newest turns that fit a token budget.

The conversation managers send a suffix of the history (after a summary, for
``Summarizing``). A suffix is a valid conversation by the host's rules when it starts at
a user message that holds no ``toolResult``: every ``toolUse`` inside it then has its
results after it, no result is left without its call, and the roles still alternate as
the host keeps them (``_host/_history.py``). The first message of the history counts as a
start too: it is what the host would send anyway.

The cost rules: the scan runs from the newest message back and stops as soon as the
budget is spent and a start was found, so a call costs what its window holds, not what
the history holds. Each message counts as ``stageware.estimate_tokens`` over it alone,
rounded up per message: never less than the estimate of the whole request.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Final, final

from stageware import ContentBlock, Message, Messages, ToolResult, estimate_tokens

__all__ = [
    "RunningTokens",
    "Window",
    "fit_window",
    "message_tokens",
    "opens_window",
    "truncate_tool_results",
]

UNLIMITED: Final = sys.maxsize

# What a truncated tool result keeps at least, so that the model still sees what it was.
_MIN_KEPT_CHARACTERS: Final = 200


def message_tokens(message: Message) -> int:
    """The estimate for *message* alone."""
    return estimate_tokens((message,))


def opens_window(message: Message) -> bool:
    """Whether a window may start at *message*: a user message without tool results."""
    return message["role"] == "user" and not any(
        "toolResult" in block for block in message["content"]
    )


@final
class RunningTokens:
    """The estimate of the message lists one agent's manager is given, call after call.

    A manager counts what it is given itself rather than trust the host's projection,
    which was made before any Input handler changed the messages. Consecutive calls share
    most of their messages (the host passes its history copies, the same objects from call
    to call), so the last list is kept (references) with the running sums of its messages'
    estimates: a new list costs one comparison with the last (in C; identical objects
    compare equal at once) plus the estimates of the messages from the first difference on.
    """

    __slots__ = ("_messages", "_sums")

    def __init__(self) -> None:
        self._messages: Messages = []
        # The estimate of the first i messages at [i], one message at a time.
        self._sums: list[int] = [0]

    def count(self, messages: Messages) -> int:
        """The estimate of *messages*: ``message_tokens`` summed over them."""
        previous = self._messages
        kept = len(previous)
        # The usual case, a list that only grew: one comparison in C.
        if kept > len(messages) or messages[:kept] != previous:
            kept = 0
            while kept < len(messages) and previous[kept] == messages[kept]:
                kept += 1
        sums = self._sums
        del sums[kept + 1 :]
        for message in messages[kept:]:
            sums.append(sums[-1] + message_tokens(message))
        self._messages = list(messages)
        return sums[-1]

    def tokens_from(self, start: int) -> int:
        """The estimate of the last counted list's messages from index *start* on."""
        return self._sums[-1] - self._sums[start]


@final
@dataclass(frozen=True, slots=True)
class Window:
    """The suffix of a conversation to send.

    Attributes:
        start: Index of its first message.
        tokens: The estimate of ``messages[start:]``.
        fits: Whether that estimate is within the budget; false when even the current
            turn (the suffix from the last message a window may start at) is larger.
    """

    start: int
    tokens: int
    fits: bool


def fit_window(messages: Messages, budget: int, max_messages: int | None = None) -> Window:
    """The longest valid suffix of *messages* within *budget* tokens and *max_messages*.

    When no valid suffix is within both, the shortest valid one: the current turn, which
    is never dropped.
    """
    count = len(messages)
    first_allowed = 0 if max_messages is None else max(0, count - max_messages)
    total = 0
    best: Window | None = None
    for index in range(count - 1, -1, -1):
        total += message_tokens(messages[index])
        over = total > budget or index < first_allowed
        if over and best is not None:
            return best
        if index == 0 or opens_window(messages[index]):
            if over:
                return Window(index, total, total <= budget)
            best = Window(index, total, True)
    return best if best is not None else Window(0, 0, True)


def truncate_tool_results(messages: Messages, tokens: int, budget: int) -> Messages:
    """*messages* with their largest tool results cut down until the estimate fits *budget*.

    *tokens* is the estimate of *messages*. Each cut result becomes one text block: the
    start of its text (JSON as text, media left out), then a note saying how much was kept.
    Results are cut largest first and only as far as needed, but each keeps a short start,
    so the estimate may stay over *budget*. New message dicts are built where a result is
    cut; the given ones are not changed.
    """
    excess = (tokens - budget) * 4
    if excess <= 0:
        return messages
    found = [
        (len(_result_text(block["toolResult"])), position, index, block["toolResult"])
        for position, message in enumerate(messages)
        for index, block in enumerate(message["content"])
        if "toolResult" in block
    ]
    found.sort(key=lambda item: item[:3], reverse=True)
    cut: dict[tuple[int, int], ContentBlock] = {}
    for size, position, index, result in found:
        if excess <= 0:
            break
        text = _result_text(result)
        kept = max(_MIN_KEPT_CHARACTERS, size - excess)
        if kept >= size:
            continue
        note = (
            f"\n[truncated to fit the context window: {kept} of {size} characters of "
            "this tool result kept]"
        )
        shortened: ToolResult = {**result, "content": [{"text": text[:kept] + note}]}
        cut[position, index] = {"toolResult": shortened}
        excess -= size - kept - len(note)
    if not cut:
        return messages
    shortened_messages: Messages = []
    for position, message in enumerate(messages):
        blocks = message["content"]
        if any((position, index) in cut for index in range(len(blocks))):
            content = [cut.get((position, index), block) for index, block in enumerate(blocks)]
            shortened_messages.append({**message, "content": content})
        else:
            shortened_messages.append(message)
    return shortened_messages


def _result_text(result: ToolResult) -> str:
    parts: list[str] = []
    for part in result["content"]:
        if "text" in part:
            parts.append(part["text"])
        if "json" in part:
            parts.append(json.dumps(part["json"], sort_keys=True, default=str))
    return "\n".join(parts)
