"""Converse payloads as the fields of an Anthropic Messages API request, with no I/O.

``_anthropic`` sends what :func:`request_fields` builds. The mapping, block by block:

- ``text`` and ``image`` blocks become ``text`` and base64 ``image`` blocks.
- ``toolUse`` becomes ``tool_use``; ``toolResult`` becomes ``tool_result`` (its ``json``
  items as text, ``status: "error"`` as ``is_error``).
- ``reasoningContent`` goes back as the ``thinking`` block (with its signature) or the
  ``redacted_thinking`` block it came from, as the API requires when extended thinking
  and tools are used together. Reasoning without a signature came from another provider;
  Anthropic would refuse it, so it is left out.
- A ``cachePoint`` block marks the block before it with ``cache_control``, which is how
  Anthropic marks the end of a cacheable prefix: in messages, in ``system_prompt_content``
  and (as an entry of its own in the tool list) in the tools.

A block Anthropic cannot carry is a ``ValueError`` naming the message and the block,
raised before any request is sent. A tool call whose input is not a JSON object (text a
model sent as arguments) goes as ``{}``, logged: its error result follows it, and
Anthropic would refuse the whole history over it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import anthropic

from stageware._generated.payloads import (
    ContentBlock,
    Message,
    Messages,
    SystemContentBlock,
    ToolChoice,
    ToolResult,
    ToolSpec,
)
from stageware._host._shorten import shorten

__all__ = [
    "convert_messages",
    "convert_system",
    "convert_tool_choice",
    "convert_tools",
    "output_format",
]

Json = dict[str, Any]

_log: Final = logging.getLogger(__name__)
# How much of a tool call's unusable input the log quotes.
_MAX_LOGGED_INPUT: Final = 80

# What Anthropic accepts as a cache breakpoint: "ephemeral" is its only kind.
_CACHE_CONTROL: Final[Mapping[str, str]] = {"type": "ephemeral"}
# Blocks Anthropic refuses `cache_control` on.
_UNCACHEABLE: Final = frozenset({"thinking", "redacted_thinking"})
_MEDIA_TYPES: Final[Mapping[str, str]] = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}


def convert_messages(messages: Messages) -> list[Json]:
    """The ``messages`` of a request for a Converse conversation.

    A message left with no blocks (it held only reasoning of another provider) is left
    out: Anthropic refuses an empty message, and merges consecutive messages of one role.

    Raises:
        ValueError: A block Anthropic cannot carry, naming ``messages[i].content[j]``.
    """
    converted: list[Json] = []
    for position, message in enumerate(messages):
        content = _message_content(message, f"messages[{position}]")
        if content:
            converted.append({"role": message["role"], "content": content})
    return converted


def convert_system(
    system_prompt: str | None, system_prompt_content: list[SystemContentBlock] | None
) -> str | list[Json] | None:
    """The ``system`` field: blocks when given (``cachePoint`` honoured), else the string.

    The host passes the same prompt both ways; the blocks win, as they can carry cache
    points.

    Raises:
        ValueError: A system block that is neither text nor a cache point, or a cache
            point with no text before it.
    """
    if system_prompt_content is None:
        return system_prompt or None
    blocks: list[Json] = []
    for position, block in enumerate(system_prompt_content):
        where = f"system_prompt_content[{position}]"
        if "cachePoint" in block:
            _mark_cached(blocks, where)
        elif "text" in block:
            blocks.append({"type": "text", "text": block["text"]})
        else:
            raise ValueError(f"{where}: a system block must be text or a cachePoint")
    return blocks or None


def convert_tools(tool_specs: Sequence[ToolSpec]) -> list[Json]:
    """Converse tool specs as Anthropic tools.

    An entry ``{"cachePoint": {"type": "default"}}`` in the list (as Converse writes a
    cache point among tools) marks the tool before it with ``cache_control``.

    Raises:
        ValueError: A cache point with no tool before it.
    """
    tools: list[Json] = []
    for position, spec in enumerate(tool_specs):
        if "cachePoint" in cast("Mapping[str, object]", spec):
            _mark_cached(tools, f"tool_specs[{position}]")
            continue
        tools.append(
            {
                "name": spec["name"],
                "description": spec["description"],
                "input_schema": spec["inputSchema"]["json"],
            }
        )
    return tools


def convert_tool_choice(tool_choice: ToolChoice) -> Json:
    """A Converse tool choice as Anthropic's ``tool_choice``."""
    match tool_choice:
        case {"tool": {"name": str() as name}}:
            return {"type": "tool", "name": name}
        case {"any": _}:
            return {"type": "any"}
        case _:
            return {"type": "auto"}


def output_format(json_schema: Mapping[str, Any]) -> Json:
    """``output_config.format`` asking for replies that are an object of *json_schema*.

    The schema goes through ``anthropic.transform_schema``, which rewrites what the API
    does not support (numeric bounds, some string formats) into descriptions and closes
    every object (``additionalProperties: false``); it copies, never changes, its input.
    """
    return {"type": "json_schema", "schema": anthropic.transform_schema(dict(json_schema))}


def _message_content(message: Message, where: str) -> list[Json]:
    role = message["role"]
    content: list[Json] = []
    for position, block in enumerate(message["content"]):
        here = f"{where}.content[{position}]"
        if len(block) != 1:
            raise ValueError(
                f"{here}: a content block must have exactly one key, got {list(block)}"
            )
        if "cachePoint" in block:
            _mark_cached(content, here)
            continue
        converted = _block(block, role, here)
        if converted is not None:
            content.append(converted)
    return content


def _block(block: ContentBlock, role: str, where: str) -> Json | None:
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "image" in block:
        return _image(block["image"]["format"], block["image"]["source"]["bytes"])
    if "toolUse" in block and role == "assistant":
        tool_use = block["toolUse"]
        return {
            "type": "tool_use",
            "id": tool_use["toolUseId"],
            "name": tool_use["name"],
            "input": _tool_input(tool_use["input"], where),
        }
    if "toolResult" in block and role == "user":
        return _tool_result(block["toolResult"], where)
    if "reasoningContent" in block and role == "assistant":
        reasoning = block["reasoningContent"]
        if "redactedContent" in reasoning:
            return {"type": "redacted_thinking", "data": reasoning["redactedContent"]}
        text = reasoning.get("reasoningText")
        signature = None if text is None else text.get("signature")
        if text is None or not signature:
            return None
        return {"type": "thinking", "thinking": text["text"], "signature": signature}
    kind = next(iter(block))
    raise ValueError(f"{where}: a {kind!r} block cannot be sent in a {role} message")


def _image(image_format: str, data: str) -> Json:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": _MEDIA_TYPES[image_format], "data": data},
    }


def _tool_input(tool_input: object, where: str) -> Json:
    """The ``input`` of a tool call in the history: Anthropic takes only a JSON object.

    A string is the raw text of arguments: a JSON object is sent parsed. Anything else
    (text that is not an object: a model's bad arguments, a call cut short by
    ``max_tokens``, from this model or from another before a fallback) cannot be sent as
    it was, and refusing the whole history would end the conversation for good. So the
    call goes as ``{}``: its tool result, right after it, already told the model that
    those arguments were not an object.
    """
    if isinstance(tool_input, dict):
        return cast("Json", tool_input)
    if isinstance(tool_input, str):
        try:
            parsed: object = json.loads(tool_input)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return cast("Json", parsed)
    _log.info(
        "%s: the tool call's input is not a JSON object (%s); Anthropic accepts only an "
        "object, so it is sent as {}",
        where,
        shorten(repr(tool_input), _MAX_LOGGED_INPUT),
    )
    return {}


def _tool_result(result: ToolResult, where: str) -> Json:
    content: list[Json] = []
    for item in result["content"]:
        if "text" in item:
            content.append({"type": "text", "text": item["text"]})
        elif "json" in item:
            content.append({"type": "text", "text": json.dumps(item["json"], ensure_ascii=False)})
        elif "image" in item:
            content.append(_image(item["image"]["format"], item["image"]["source"]["bytes"]))
        else:
            raise ValueError(f"{where}: a tool result item must be text, json or an image")
    converted: Json = {"type": "tool_result", "tool_use_id": result["toolUseId"]}
    if content:
        converted["content"] = content
    if result["status"] == "error":
        converted["is_error"] = True
    return converted


def _mark_cached(blocks: list[Json], where: str) -> None:
    """Put ``cache_control`` on the last block: a cache point ends the prefix before it."""
    if not blocks:
        raise ValueError(f"{where}: a cachePoint must follow the block it caches")
    last = blocks[-1]
    kind = last.get("type")
    if kind in _UNCACHEABLE:
        raise ValueError(f"{where}: Anthropic cannot cache at a {kind} block")
    last["cache_control"] = dict(_CACHE_CONTROL)
