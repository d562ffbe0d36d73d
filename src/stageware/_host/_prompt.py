"""Turning what a caller passes to ``agent(...)`` into messages for the history."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, TypeAlias, cast

from stageware._generated.payloads import ContentBlock, Message, Messages

__all__ = ["Prompt", "prompt_messages"]

_BLOCK_KINDS = frozenset(ContentBlock.__annotations__)

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
    if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence):
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
        if isinstance(item, str):
            raise TypeError(
                f"prompt[{index}] is a str: pass a single str as the prompt, or content "
                "blocks such as {'text': ...}"
            )
        if not isinstance(item, dict) or "role" in item:
            raise TypeError(
                f"prompt[{index}]: a prompt list holds either messages (with 'role') or "
                f"content blocks (without), not both; got {item!r}"
            )
        _check_block(f"prompt[{index}]", cast("dict[str, Any]", item))
    blocks = cast("list[ContentBlock]", copy.deepcopy(items))
    message: Message = {"role": "user", "content": blocks}
    return [message]


def _check_message(index: int, message: dict[str, Any]) -> None:
    if message["role"] not in ("user", "assistant"):
        raise TypeError(
            f"prompt[{index}]['role'] must be 'user' or 'assistant', got {message['role']!r}"
        )
    content: object = message.get("content")
    if not isinstance(content, list):
        raise TypeError(f"prompt[{index}]['content'] must be a list of content blocks")
    for position, block in enumerate(cast("list[object]", content)):
        where = f"prompt[{index}]['content'][{position}]"
        if not isinstance(block, dict):
            raise TypeError(f"{where} must be a content block dict, got {block!r}")
        _check_block(where, cast("dict[str, Any]", block))


def _check_block(where: str, block: dict[str, Any]) -> None:
    # One known key per block: anything else would reach the model as data it cannot
    # read, or (an interrupt response sent when nothing is waiting) as a silent no-op.
    keys = list(block)
    if len(keys) != 1 or keys[0] not in _BLOCK_KINDS:
        known = ", ".join(sorted(_BLOCK_KINDS))
        raise TypeError(f"{where} must be a content block with one key of: {known}; got {keys}")
