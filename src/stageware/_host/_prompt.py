"""Turning what a caller passes to ``agent(...)`` into messages for the history."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, TypeAlias, cast

from stageware._generated.payloads import ContentBlock, Message, Messages

__all__ = ["Prompt", "prompt_messages"]

Prompt: TypeAlias = "str | Sequence[ContentBlock] | Messages | Sequence[dict[str, Any]] | None"
"""What an agent accepts: text, content blocks of one user message, whole messages,
interrupt responses (``[{"interruptResponse": ...}]``), or ``None`` to continue."""


def prompt_messages(prompt: object) -> Messages:
    """The messages *prompt* appends to the history (deep copies of the caller's data).

    Raises:
        TypeError: If *prompt* is none of the accepted forms; the message says which item
            did not fit.
    """
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [{"role": "user", "content": [{"text": prompt}]}]
    if not isinstance(prompt, list | tuple):
        raise TypeError(
            f"a prompt is a str, a list of content blocks, a list of messages or None; "
            f"got {type(prompt).__name__}"
        )
    items: list[object] = list(cast("Sequence[object]", prompt))
    if not items:
        return []
    if all(isinstance(item, dict) and "role" in item for item in items):
        for index, item in enumerate(items):
            _check_message(index, cast("dict[str, Any]", item))
        return cast("Messages", copy.deepcopy(items))
    for index, item in enumerate(items):
        if not isinstance(item, dict) or "role" in item:
            raise TypeError(
                f"prompt[{index}]: a prompt list holds either messages (with 'role') or "
                f"content blocks (without), not both; got {item!r}"
            )
    blocks = cast("list[ContentBlock]", copy.deepcopy(items))
    message: Message = {"role": "user", "content": blocks}
    return [message]


def _check_message(index: int, message: dict[str, Any]) -> None:
    if message["role"] not in ("user", "assistant"):
        raise TypeError(
            f"prompt[{index}]['role'] must be 'user' or 'assistant', got {message['role']!r}"
        )
    if not isinstance(message.get("content"), list):
        raise TypeError(f"prompt[{index}]['content'] must be a list of content blocks")
