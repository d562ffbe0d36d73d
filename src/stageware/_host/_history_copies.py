"""The copies of the history that InvokeModel handlers see, kept from one model call to the next.

The copy rules give every InvokeModel handler a deep copy of the conversation, so nothing
it does to ``context.messages`` reaches the agent's history. Copying the whole history on
every model call made a long conversation's calls cost in proportion to its length. But
a conversation changes little between two model calls (the turn just appended), so the
copies one call handed out are kept, checked against the history at the next call, and
only what is new is copied.

The check is equality: one comparison of the two lists, in C, and, when they differ,
message by message to find the first that does. A copy a handler changed no longer equals
the history's message, so it is dropped and copied again with everything after it; so
does a history the agent repaired or replaced. Every call gets a list of its own, which a
handler may reorder, extend or shorten freely.

What differs from copying afresh on every call is only this: a message copy that still
equals the history is handed out again. A handler that kept a message from an earlier call
and changes it later changes the copy a later call sees (never the agent's history), and
values that compare equal (``1`` and ``1.0``, ``True`` and ``1``) count as unchanged.
"""

from __future__ import annotations

from typing import final

from stageware._generated.payloads import Message, Messages
from stageware._runtime import copy_payload

__all__ = ["HistoryCopies", "common_prefix"]


def common_prefix(copies: Messages, history: Messages) -> int:
    """How many messages *history* starts with that equal *copies*' first ones.

    Also how a session save finds what the store already holds.
    """
    shorter = min(len(copies), len(history))
    # One comparison in C for the usual case, a history that only grew.
    if copies[:shorter] == history[:shorter]:
        return shorter
    kept = 0
    while copies[kept] == history[kept]:
        kept += 1
    return kept


@final
class HistoryCopies:
    """Deep copies of one agent's history, reused while they still equal it."""

    __slots__ = ("_copies",)

    def __init__(self) -> None:
        self._copies: list[Message] = []

    def copy_of(self, history: Messages) -> Messages:
        """A list of deep copies of *history*'s messages, for one model call."""
        copies = self._copies
        kept = common_prefix(copies, history)
        del copies[kept:]
        copies.extend([copy_payload(message) for message in history[kept:]])
        return list(copies)
