"""Turning a Converse event stream back into the assistant message it describes.

A model streams its answer as Converse events (``messageStart``, content block
start/delta/stop, ``messageStop``, ``metadata``). The agent host needs the finished
assistant ``Message``, the stop reason, usage and metrics; tests need the same to check
what a model produced. :class:`ResponseAssembler` does this incrementally, one event at
a time, so the host can pass each event on to middleware as it arrives;
:func:`collect_response` drains a whole stream with it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, final

from stageware._generated.payloads import (
    ContentBlock,
    ContentBlockDelta,
    Message,
    Metrics,
    ReasoningContentBlock,
    ReasoningText,
    Role,
    StopReason,
    StreamEvent,
    ToolUse,
    Usage,
)

__all__ = ["CollectedResponse", "ResponseAssembler", "StreamAssemblyError", "collect_response"]


class StreamAssemblyError(ValueError):
    """A model's event stream cannot be turned into a message.

    Raised for a stream that ended without ``messageStop``, that sent a second
    ``messageStop``, that mixed kinds of content in one block, or that streamed tool
    input without the ``contentBlockStart`` naming the tool.
    """


class CollectedResponse(NamedTuple):
    """What a model's stream amounted to.

    A named tuple, so ``stop_reason, message, usage, metrics = ...`` works as well as
    attribute access.

    Attributes:
        stop_reason: Why the model stopped, from ``messageStop``.
        message: The assistant message the content blocks make up, in block-index order.
        usage: Token counts from ``metadata``; all zero when the stream sent none.
        metrics: Timing from ``metadata``; ``latencyMs`` 0 when the stream sent none.
    """

    stop_reason: StopReason
    message: Message
    usage: Usage
    metrics: Metrics


_BlockKind = Literal["text", "reasoning", "tool_use"]


def _no_fragments() -> list[str]:
    # A typed factory: a bare ``list`` would leave strict pyright an unknown item type.
    return []


@dataclass
class _Block:
    """One content block while its fragments arrive."""

    index: int
    kind: _BlockKind | None = None
    # Fragments are collected and joined once at the end: repeated ``str +=`` on long
    # answers would copy the text again for every fragment.
    text: list[str] = field(default_factory=_no_fragments)
    signature: list[str] = field(default_factory=_no_fragments)
    redacted: list[str] = field(default_factory=_no_fragments)
    tool_use_id: str | None = None
    tool_name: str | None = None

    def claim(self, kind: _BlockKind) -> None:
        """Fix the block's kind on its first fragment; refuse a fragment of another kind."""
        if self.kind is None:
            self.kind = kind
        elif self.kind != kind:
            raise StreamAssemblyError(
                f"content block {self.index} is a {self.kind} block but received a {kind} delta"
            )


@final
class ResponseAssembler:
    """Builds the assistant message from Converse stream events, one event at a time.

    Feed every event to :meth:`add` in stream order, then call :meth:`finish`.

    Blocks are placed by ``contentBlockIndex``. An event without an index belongs to the
    block that is currently open (started or receiving deltas and not yet stopped), or
    opens the next block if none is, which is how providers that omit the index behave.

    Choices made where a stream is not well formed:

    - A tool use whose streamed input is not valid JSON keeps the raw string as its
      ``input`` rather than an empty object: the tool's input validation then reports the
      real problem to the model, instead of the tool running with no arguments. Input
      that streamed no fragments at all (or only an empty string) is ``{}``, as providers
      send for tools without parameters.
    - A missing ``messageStart`` is tolerated (the role is ``assistant``); a missing
      ``messageStop`` is an error, because without it the stop reason is unknown.
    - A missing ``metadata`` event gives zero usage and zero latency; if several arrive
      the last one wins.
    - ``additionalModelResponseFields`` and unknown event keys are ignored.
    """

    __slots__ = ("_blocks", "_metadata_usage", "_metrics", "_open", "_role", "_stop_reason")

    def __init__(self) -> None:
        self._role: Role | None = None
        self._blocks: dict[int, _Block] = {}
        self._open: _Block | None = None
        self._stop_reason: StopReason | None = None
        self._metadata_usage: Usage | None = None
        self._metrics: Metrics | None = None

    def add(self, event: StreamEvent) -> None:
        """Take in the next event of the stream."""
        if "messageStart" in event:
            self._role = event["messageStart"]["role"]
        if "contentBlockStart" in event:
            start_event = event["contentBlockStart"]
            block = self._block(start_event.get("contentBlockIndex"))
            tool = start_event["start"].get("toolUse")
            if tool is not None:
                block.claim("tool_use")
                block.tool_use_id = tool["toolUseId"]
                block.tool_name = tool["name"]
        if "contentBlockDelta" in event:
            delta_event = event["contentBlockDelta"]
            self._apply_delta(
                self._block(delta_event.get("contentBlockIndex")), delta_event["delta"]
            )
        if "contentBlockStop" in event:
            index = event["contentBlockStop"].get("contentBlockIndex")
            if index is None:
                self._open = None
            else:
                # A stop for a block that never received anything still reserves its index.
                self._block(index)
                if self._open is not None and self._open.index == index:
                    self._open = None
        if "messageStop" in event:
            if self._stop_reason is not None:
                raise StreamAssemblyError("the stream sent a second messageStop")
            self._stop_reason = event["messageStop"]["stopReason"]
        if "metadata" in event:
            metadata = event["metadata"]
            # Copies: the caller may keep and mutate its events.
            self._metadata_usage = metadata["usage"].copy()
            self._metrics = metadata["metrics"].copy()

    def finish(self) -> CollectedResponse:
        """Return the stop reason, assistant message, usage and metrics.

        May be called more than once; each call builds fresh objects.

        Raises:
            StreamAssemblyError: The stream had no ``messageStop``, or a tool use block
                had input but no ``contentBlockStart`` naming the tool.
        """
        if self._stop_reason is None:
            missing = "messageStop" if self._role is not None else "messageStart and messageStop"
            raise StreamAssemblyError(
                f"the model stream ended without {missing}: "
                "the stop reason is unknown, so the response is incomplete"
            )
        content: list[ContentBlock] = []
        for index in sorted(self._blocks):
            built = _build_block(self._blocks[index])
            if built is not None:
                content.append(built)
        usage = (
            self._metadata_usage.copy()
            if self._metadata_usage is not None
            else Usage(inputTokens=0, outputTokens=0, totalTokens=0)
        )
        metrics = self._metrics.copy() if self._metrics is not None else Metrics(latencyMs=0)
        message = Message(role=self._role or "assistant", content=content)
        return CollectedResponse(self._stop_reason, message, usage, metrics)

    def _block(self, index: int | None) -> _Block:
        if index is None:
            if self._open is not None:
                return self._open
            index = max(self._blocks, default=-1) + 1
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(index)
        self._open = block
        return block

    @staticmethod
    def _apply_delta(block: _Block, delta: ContentBlockDelta) -> None:
        if "text" in delta:
            block.claim("text")
            block.text.append(delta["text"])
        if "reasoningContent" in delta:
            block.claim("reasoning")
            reasoning = delta["reasoningContent"]
            if "text" in reasoning:
                block.text.append(reasoning["text"])
            if "signature" in reasoning:
                block.signature.append(reasoning["signature"])
            if "redactedContent" in reasoning:
                block.redacted.append(reasoning["redactedContent"])
        if "toolUse" in delta:
            block.claim("tool_use")
            block.text.append(delta["toolUse"]["input"])


def _build_block(block: _Block) -> ContentBlock | None:
    """The finished content block, or None for a block that never received content."""
    if block.kind == "text":
        return ContentBlock(text="".join(block.text))
    if block.kind == "reasoning":
        reasoning = ReasoningContentBlock()
        if block.text or block.signature:
            reasoning_text = ReasoningText(text="".join(block.text))
            if block.signature:
                reasoning_text["signature"] = "".join(block.signature)
            reasoning["reasoningText"] = reasoning_text
        if block.redacted:
            reasoning["redactedContent"] = "".join(block.redacted)
        return ContentBlock(reasoningContent=reasoning)
    if block.kind == "tool_use":
        if block.tool_use_id is None or block.tool_name is None:
            raise StreamAssemblyError(
                f"content block {block.index} streamed tool input but no contentBlockStart "
                "gave its toolUseId and name"
            )
        return ContentBlock(
            toolUse=ToolUse(
                toolUseId=block.tool_use_id,
                name=block.tool_name,
                input=_parse_tool_input("".join(block.text)),
            )
        )
    return None


def _parse_tool_input(raw: str) -> Any:
    """Parse streamed tool input; keep unparsable input as the raw string (see the class)."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


async def collect_response(events: AsyncIterable[StreamEvent]) -> CollectedResponse:
    """Drain *events* and return what they amount to (see :class:`ResponseAssembler`)."""
    assembler = ResponseAssembler()
    async for event in events:
        assembler.add(event)
    return assembler.finish()
