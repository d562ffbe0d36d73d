"""``RedactPII``: personal data replaced in what the model reads and what it writes.

One object, three handlers, each a typed handler of the stage it belongs to, installed
together by ``install(agent)`` (or one by one with ``add_middleware``):

- **Model input** (InvokeModel Input, ``redact_input``): the messages sent to the model,
  text blocks, tool-use inputs and tool results alike, and optionally the system prompt.
  The agent's history keeps what the user wrote; only the model's copy is redacted.
- **Model output** (InvokeModel Wrap, ``redact_output``): the model's text, before it
  reaches the history and the caller. A match can straddle two chunks, so the text
  deltas of a content block are held until the block ends and then streamed as one
  redacted delta: a ``stream_async`` reader sees each text block arrive whole, never a
  fragment of an unredacted match. The final message (what enters the history) has its
  text redacted too. Tool-use inputs the model writes are not: they are the arguments
  the tool runs with, and the model only ever saw redacted input.
- **Tool results** (ExecuteTool Output, ``redact_tool_result``): the text and the
  strings of the JSON a tool returned, before the model reads them. ``ToolStreamEvent``
  progress streamed while a tool runs goes to the caller, not the model, and is not
  redacted.

Reasoning (``reasoningContent``) is not redacted, either way: the provider signs it and
refuses it back changed, so a redacted copy would break the next request. The model only
ever read redacted data; its reasoning holds personal data only if the model made it up,
and an application that shows reasoning to people decides itself what it shows.

Replacements: ``"label"`` (``[email]``), ``"mask"`` (``*`` for every character) or
``"hash"`` (``[email:1f2e3d4c]``, an HMAC of the value, so the model can still tell two
addresses apart without seeing either; stable for one key, and the key is random per
object unless given, so a hash cannot be looked up in a table of known addresses).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import aclosing
from functools import partial
from typing import Any, Literal, TypeAlias, cast, final

from stageware import (
    ContentBlock,
    ExecuteToolResult,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    Message,
    MiddlewareHost,
    ModelStopReason,
    ModelStreamChunkEvent,
    StreamEvent,
    ToolResultContent,
    ToolResultEvent,
)

from ._pii_patterns import BUILTIN_PATTERNS, PIIName, PIIPattern

__all__ = ["PIIReplacement", "RedactPII"]

PIIReplacement: TypeAlias = Literal["label", "mask", "hash"]
"""How a match is replaced: ``[email]``, ``*****`` or ``[email:1f2e3d4c]``."""

_REPLACEMENTS: tuple[PIIReplacement, ...] = ("label", "mask", "hash")


@final
class RedactPII:
    """Replace personal data in the model's input, its output and tool results.

    Install it on an agent in one call:

    ```python
    RedactPII(["email", "phone"]).install(agent)
    ```

    Args:
        patterns: What to find: built-in names (``"email"``, ``"credit_card"`` with a
            Luhn check, ``"iban"`` with its mod-97 check, ``"us_ssn"``, ``"ipv4"``,
            ``"phone"``) and your own ``PIIPattern``s; they apply in the order given.
            By default every built-in.
        replacement: ``"label"``, ``"mask"`` or ``"hash"``.
        model_input: Redact the messages sent to the model.
        system_prompt: Redact the system prompt sent to the model too (off by default:
            it is the application's text, not the user's).
        model_output: Redact the model's text before the history and the caller get it.
        tool_results: Redact tool results before the model reads them.
        hash_key: The key of ``"hash"`` replacements; by default random per object.

    Raises:
        ValueError: An unknown pattern name, no patterns, an unknown replacement, or
            every target switched off.
        TypeError: A pattern that is neither a built-in name nor a ``PIIPattern``.
    """

    __slots__ = ("_hash_key", "_patterns", "_replacement", "_targets")

    def __init__(
        self,
        patterns: Iterable[PIIName | PIIPattern] = tuple(BUILTIN_PATTERNS),
        *,
        replacement: PIIReplacement = "label",
        model_input: bool = True,
        system_prompt: bool = False,
        model_output: bool = True,
        tool_results: bool = True,
        hash_key: bytes | None = None,
    ) -> None:
        if isinstance(cast(object, patterns), str):
            raise TypeError(f"RedactPII: patterns must be a list, not the string {patterns!r}")
        self._patterns = tuple(_pattern(item) for item in patterns)
        if not self._patterns:
            raise ValueError("RedactPII: patterns is empty; name at least one")
        if replacement not in _REPLACEMENTS:
            raise ValueError(
                f"RedactPII: replacement must be one of {', '.join(_REPLACEMENTS)}, "
                f"got {replacement!r}"
            )
        self._replacement: PIIReplacement = replacement
        self._targets = {
            "model_input": model_input,
            "system_prompt": system_prompt,
            "model_output": model_output,
            "tool_results": tool_results,
        }
        if not any(self._targets.values()):
            raise ValueError("RedactPII: every target is switched off; it would redact nothing")
        self._hash_key = hash_key if hash_key is not None else os.urandom(32)

    @property
    def patterns(self) -> tuple[PIIPattern, ...]:
        """The patterns, in the order they apply."""
        return self._patterns

    def install(self, agent: MiddlewareHost) -> None:
        """Register the handlers of the switched-on targets on *agent*.

        Input first, then Wrap, then Output, each after the handlers already registered
        in its phase.
        """
        if self._targets["model_input"] or self._targets["system_prompt"]:
            agent.add_middleware(InvokeModelStage.Input, self.redact_input)
        if self._targets["model_output"]:
            agent.add_middleware(InvokeModelStage.Wrap, self.redact_output)
        if self._targets["tool_results"]:
            agent.add_middleware(ExecuteToolStage.Output, self.redact_tool_result)

    def redact(self, text: str) -> str:
        """*text* with every match of the patterns replaced."""
        for pattern in self._patterns:
            text = pattern.compiled.sub(partial(self._replace, pattern), text)
        return text

    def _replace(self, pattern: PIIPattern, match: re.Match[str]) -> str:
        value = match[0]
        if pattern.check is not None and not pattern.check(value):
            return value
        if self._replacement == "mask":
            return "*" * len(value)
        if self._replacement == "hash":
            digest = hmac.new(self._hash_key, value.encode(), hashlib.sha256).hexdigest()
            return f"[{pattern.name}:{digest[:8]}]"
        return f"[{pattern.name}]"

    def redact_input(self, context: InvokeModelContext) -> InvokeModelContext:
        """InvokeModel Input: the messages (and, if switched on, the system prompt)."""
        if self._targets["model_input"]:
            context = context.replace(
                messages=[self._message(message, tool_use=True) for message in context.messages]
            )
        if self._targets["system_prompt"] and context.system_prompt is not None:
            prompt = context.system_prompt
            if isinstance(prompt, str):
                context = context.replace(system_prompt=self.redact(prompt))
            else:
                context = context.replace(
                    system_prompt=[
                        {**block, "text": self.redact(block["text"])} if "text" in block else block
                        for block in prompt
                    ]
                )
        return context

    async def redact_output(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """InvokeModel Wrap: the model's text, streamed per content block, and its message."""
        held: list[str] = []
        index: int | None = None
        async with aclosing(next_fn(context)) as events:
            async for event in events:
                if isinstance(event, ModelStopReason):
                    if held:
                        yield _text_chunk(self.redact("".join(held)), index)
                        held.clear()
                    message = self._message(event.message, tool_use=False)
                    yield ModelStopReason(event.stop_reason, message, event.usage, event.metrics)
                    continue
                delta = event.chunk.get("contentBlockDelta")
                if delta is not None and "text" in delta["delta"]:
                    if not held:
                        index = delta.get("contentBlockIndex")
                    held.append(delta["delta"]["text"])
                    continue
                if held:
                    # The block ended (or something else began): its text is complete.
                    yield _text_chunk(self.redact("".join(held)), index)
                    held.clear()
                yield event
        if held:
            yield _text_chunk(self.redact("".join(held)), index)

    def redact_tool_result(self, result: ExecuteToolResult) -> ExecuteToolResult:
        """ExecuteTool Output: the text and JSON strings the model will read."""
        event = result.result
        tool_result = event.tool_result
        content = [self._tool_content(item) for item in tool_result["content"]]
        redacted = ToolResultEvent({**tool_result, "content": content}, event.exception)
        return result.replace(result=redacted)

    def _message(self, message: Message, *, tool_use: bool) -> Message:
        return {
            "role": message["role"],
            "content": [self._block(block, tool_use=tool_use) for block in message["content"]],
        }

    def _block(self, block: ContentBlock, *, tool_use: bool) -> ContentBlock:
        if "text" in block:
            return {**block, "text": self.redact(block["text"])}
        if "toolResult" in block:
            result = block["toolResult"]
            content = [self._tool_content(item) for item in result["content"]]
            return {**block, "toolResult": {**result, "content": content}}
        if tool_use and "toolUse" in block:
            call = block["toolUse"]
            return {**block, "toolUse": {**call, "input": self._json(call["input"])}}
        return block

    def _tool_content(self, item: ToolResultContent) -> ToolResultContent:
        if "text" in item:
            return {**item, "text": self.redact(item["text"])}
        if "json" in item:
            return {**item, "json": self._json(item["json"])}
        return item

    def _json(self, value: object) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {
                key: self._json(item) for key, item in cast(Mapping[str, object], value).items()
            }
        if isinstance(value, list):
            return [self._json(item) for item in cast(list[object], value)]
        return value

    def __repr__(self) -> str:
        names = ", ".join(pattern.name for pattern in self._patterns)
        targets = ", ".join(name for name, on in self._targets.items() if on)
        return f"RedactPII([{names}], replacement={self._replacement!r}, targets: {targets})"


def _pattern(item: object) -> PIIPattern:
    if isinstance(item, PIIPattern):
        return item
    if isinstance(item, str):
        builtin = BUILTIN_PATTERNS.get(cast(PIIName, item))
        if builtin is None:
            raise ValueError(
                f"RedactPII: no built-in pattern named {item!r}; the built-ins are "
                f"{', '.join(BUILTIN_PATTERNS)} (or pass a PIIPattern)"
            )
        return builtin
    raise TypeError(f"RedactPII: {item!r} is neither a built-in pattern name nor a PIIPattern")


def _text_chunk(text: str, index: int | None) -> ModelStreamChunkEvent:
    chunk: StreamEvent = {"contentBlockDelta": {"delta": {"text": text}}}
    if index is not None:
        chunk["contentBlockDelta"]["contentBlockIndex"] = index
    return ModelStreamChunkEvent(chunk)
