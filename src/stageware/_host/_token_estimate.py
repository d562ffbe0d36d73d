"""The documented token estimate: what a request costs when no provider has counted it.

Providers count tokens with their own tokenizers, which differ and most of which cannot
run locally. The estimate here is one rule for all of them, cheap enough to run on every
model call and pure, so tests can assert on it exactly:

- text (message text, reasoning text, text in tool results, the system prompt): one
  token per four characters, rounded up over the whole request;
- JSON (a tool call's input, a ``json`` tool-result block, a tool spec): the same, over
  its JSON text (``json.dumps`` with sorted keys);
- an image or a document: ``MEDIA_TOKENS`` each (a provider charges by size; a
  1,000 x 1,000 image is about 1,300 tokens on the large providers);
- nothing for roles, block markers or cache points.

English prose averages about four characters per token on current tokenizers; code and
other languages run denser, so a budget built on this estimate should leave a margin (the
conversation managers keep 10% by default). ``ScriptedModel`` counts its default input
usage and checks its ``context_window`` with this same rule.

:class:`RunningCharacters` counts a conversation that grows from call to call at the cost
of its new messages: the host's ``projected_input_tokens`` and ``ScriptedModel`` use it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, final

from stageware._generated.payloads import (
    ContentBlock,
    Message,
    Messages,
    SystemContentBlock,
    ToolSpec,
)

from ._history_copies import common_prefix

__all__ = [
    "MEDIA_TOKENS",
    "RunningCharacters",
    "estimate_tokens",
    "message_characters",
    "request_characters",
    "tokens_for_characters",
]

MEDIA_TOKENS = 1_600
"""Tokens counted for each image or document block."""

# An image or document counts as this many characters, so that characters stay the one
# unit summed over a request and rounding happens once.
_MEDIA_CHARACTERS = MEDIA_TOKENS * 4


def tokens_for_characters(characters: int) -> int:
    """The estimate for *characters* of text and JSON: one token per four, rounded up."""
    return math.ceil(characters / 4)


def _json_characters(value: Any) -> int:
    # default=str: the estimate must not fail on a value a host put in the history.
    return len(json.dumps(value, sort_keys=True, default=str))


def _block_characters(block: ContentBlock) -> int:
    total = len(block.get("text", ""))
    if "toolUse" in block:
        total += _json_characters(block["toolUse"]["input"])
    if "toolResult" in block:
        for part in block["toolResult"]["content"]:
            total += len(part.get("text", ""))
            if "json" in part:
                total += _json_characters(part["json"])
            if "image" in part or "document" in part:
                total += _MEDIA_CHARACTERS
    if "reasoningContent" in block:
        total += len(block["reasoningContent"].get("reasoningText", {"text": ""})["text"])
    if "image" in block or "document" in block:
        total += _MEDIA_CHARACTERS
    return total


def message_characters(message: Message) -> int:
    """The characters *message* counts for in the estimate (media at their fixed count)."""
    return sum(_block_characters(block) for block in message["content"])


def _system_characters(system_prompt: str | Iterable[SystemContentBlock] | None) -> int:
    if system_prompt is None:
        return 0
    if isinstance(system_prompt, str):
        return len(system_prompt)
    return sum(len(block.get("text", "")) for block in system_prompt)


def request_characters(
    *,
    system_prompt: str | Iterable[SystemContentBlock] | None = None,
    tool_specs: Iterable[ToolSpec] | None = None,
) -> int:
    """The characters a request's system prompt and tool specs count for, messages aside."""
    characters = _system_characters(system_prompt)
    for spec in tool_specs or ():
        characters += _json_characters(
            [spec["name"], spec.get("description", ""), spec["inputSchema"]]
        )
    return characters


def estimate_tokens(
    messages: Iterable[Message],
    *,
    system_prompt: str | Iterable[SystemContentBlock] | None = None,
    tool_specs: Iterable[ToolSpec] | None = None,
) -> int:
    """The estimated input tokens of a request: *messages*, the system prompt and the tools.

    See the module's documentation for the rule. A tool spec counts as the JSON of its
    name, description and input schema.
    """
    characters = sum(message_characters(message) for message in messages)
    characters += request_characters(system_prompt=system_prompt, tool_specs=tool_specs)
    return tokens_for_characters(characters)


@final
class RunningCharacters:
    """The characters of the message lists one caller counts, call after call.

    Consecutive calls of one conversation share most of their messages, so the messages
    of the last list are kept (references, not copies) with the running sum of their
    characters, and a new list costs one comparison with the last (in C, where a message
    that is the same object compares equal at once) plus counting the messages that
    differ from the last list's from their first difference on. So a history that grows
    by a turn costs that turn, and one a handler trimmed at the front is counted again,
    once.

    A message changed in place after it was counted, and passed again as the same
    object, keeps its old count: the host passes its history copies, which are new
    objects wherever the history changed (``HistoryCopies``).
    """

    __slots__ = ("_messages", "_sums")

    def __init__(self) -> None:
        self._messages: Messages = []
        # The characters of the first i messages at [i].
        self._sums: list[int] = [0]

    def count(self, messages: Messages) -> int:
        """The characters of *messages*, as :func:`message_characters` sums them."""
        kept = common_prefix(self._messages, messages)
        sums = self._sums
        del sums[kept + 1 :]
        for message in messages[kept:]:
            sums.append(sums[-1] + message_characters(message))
        self._messages = list(messages)
        return sums[-1]
