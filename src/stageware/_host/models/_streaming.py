"""Turning a Converse event stream back into the assistant message it describes.

A model streams its answer as Converse events (``messageStart``, content block
start/delta/stop, ``messageStop``, ``metadata``). The agent host needs the finished
assistant ``Message``, the stop reason, usage and metrics; tests need the same to check
what a model produced. :class:`ResponseAssembler` does this incrementally, one event at
a time, so the host can pass each event on to middleware as it arrives;
:func:`collect_response` drains a whole stream with it. A custom model's events are
checked as they arrive, so a malformed one is reported where it happened, by position.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast, final

from stageware._generated.payloads import (
    ContentBlock,
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
from stageware._host._shorten import shorten

from ._errors import StreamAssemblyError

__all__ = [
    "CollectedResponse",
    "ResponseAssembler",
    "StreamAssemblyError",
    "check_tool_use_ids",
    "collect_response",
]

# The event types of a Converse stream; an event of any other type would be dropped.
_EVENT_TYPES = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
)
_DELTA_TYPES = ("text", "toolUse", "reasoningContent")
# How much of an offending event an error message quotes.
_MAX_EVENT_REPR = 200


class _MalformedEventError(Exception):
    """What is wrong with the event being added; ``add`` names the event and its index."""


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
            raise _MalformedEventError(
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

    - An event that is not a Converse stream event (not a dict, an unknown event or delta
      type, a value of the wrong type such as a number as text) is a
      ``StreamAssemblyError`` from :meth:`add` naming the event and its position:
      dropping it would lose content without a word.
    - A tool use whose streamed input is not valid JSON keeps the raw string as its
      ``input`` rather than an empty object: the tool's input validation then reports the
      real problem to the model, instead of the tool running with no arguments. Input
      that streamed no fragments at all (or only an empty string) is ``{}``, as providers
      send for tools without parameters.
    - A missing ``messageStart`` is tolerated (the role is ``assistant``); a missing
      ``messageStop`` is an error, because without it the stop reason is unknown.
    - A stream without content is an error: an empty assistant message is nothing to act
      on, and providers reject one sent back in the history.
    - A missing ``metadata`` event gives zero usage and zero latency; if several arrive
      the last one wins.
    - A turn whose tool calls repeat a ``toolUseId`` is an error (see
      :func:`check_tool_use_ids`).
    - ``additionalModelResponseFields`` is ignored.
    """

    __slots__ = (
        "_blocks",
        "_events",
        "_metadata_usage",
        "_metrics",
        "_open",
        "_role",
        "_stop_reason",
    )

    def __init__(self) -> None:
        self._role: Role | None = None
        self._blocks: dict[int, _Block] = {}
        self._open: _Block | None = None
        self._stop_reason: StopReason | None = None
        self._metadata_usage: Usage | None = None
        self._metrics: Metrics | None = None
        self._events = 0

    def add(self, event: StreamEvent) -> None:
        """Take in the next event of the stream.

        Raises:
            StreamAssemblyError: The event is not a well-formed Converse stream event, or
                contradicts the events before it; the error names it and its position.
        """
        position = self._events
        self._events += 1
        try:
            # Read as untyped data: a custom model's events are checked, not trusted.
            self._take(_mapping(cast(object, event), "a stream event"))
        except _MalformedEventError as problem:
            raise StreamAssemblyError(
                f"model stream event {position} ({_short_repr(event)}): {problem}",
                event_index=position,
                event=event,
            ) from None

    def finish(self) -> CollectedResponse:
        """Return the stop reason, assistant message, usage and metrics.

        May be called more than once; each call builds fresh objects.

        Raises:
            StreamAssemblyError: The stream was empty, had no ``messageStop`` or no
                content, or a tool use block had input but no ``contentBlockStart``
                naming the tool.
        """
        if self._stop_reason is None:
            if self._events == 0:
                raise StreamAssemblyError(
                    "the model stream was empty: it ended before its first event"
                )
            missing = "messageStop" if self._role is not None else "messageStart and messageStop"
            raise StreamAssemblyError(
                f"the model stream ended without {missing}: "
                "the stop reason is unknown, so the response is incomplete"
            )
        content: list[ContentBlock] = []
        for index in sorted(self._blocks):
            built = _build_block(self._blocks[index])
            # A blank text block is no content: Converse providers refuse one in a request.
            if built is not None and built != {"text": ""}:
                content.append(built)
        if not content:
            raise StreamAssemblyError(
                f"the model stream carried no content (stop reason {self._stop_reason!r}): "
                "an empty assistant message is not a response"
            )
        usage = (
            self._metadata_usage.copy()
            if self._metadata_usage is not None
            else Usage(inputTokens=0, outputTokens=0, totalTokens=0)
        )
        metrics = self._metrics.copy() if self._metrics is not None else Metrics(latencyMs=0)
        message = Message(role=self._role or "assistant", content=content)
        check_tool_use_ids(message)
        return CollectedResponse(self._stop_reason, message, usage, metrics)

    def _take(self, event: Mapping[str, object]) -> None:
        unknown = [key for key in event if key not in _EVENT_TYPES]
        if unknown:
            raise _MalformedEventError(
                f"unknown event type {unknown[0]!r}; a stream event is one of "
                + ", ".join(_EVENT_TYPES)
            )
        if not event:
            raise _MalformedEventError("the event is empty")
        if "messageStart" in event:
            role = _mapping(event["messageStart"], "messageStart").get("role")
            if role != "assistant" and role != "user":
                raise _MalformedEventError(f"messageStart.role must be a role, got {role!r}")
            self._role = "assistant" if role == "assistant" else "user"
        if "contentBlockStart" in event:
            start_event = _mapping(event["contentBlockStart"], "contentBlockStart")
            start = _mapping(start_event.get("start"), "contentBlockStart.start")
            block = self._block(_block_index(start_event, "contentBlockStart"))
            if "toolUse" in start:
                tool = _mapping(start["toolUse"], "contentBlockStart.start.toolUse")
                block.claim("tool_use")
                block.tool_use_id = _str(tool.get("toolUseId"), "toolUse.toolUseId")
                block.tool_name = _str(tool.get("name"), "toolUse.name")
        if "contentBlockDelta" in event:
            delta_event = _mapping(event["contentBlockDelta"], "contentBlockDelta")
            delta = _mapping(delta_event.get("delta"), "contentBlockDelta.delta")
            self._apply_delta(self._block(_block_index(delta_event, "contentBlockDelta")), delta)
        if "contentBlockStop" in event:
            stop_event = _mapping(event["contentBlockStop"], "contentBlockStop")
            index = _block_index(stop_event, "contentBlockStop")
            if index is None:
                self._open = None
            else:
                # A stop for a block that never received anything still reserves its index.
                self._block(index)
                if self._open is not None and self._open.index == index:
                    self._open = None
        if "messageStop" in event:
            stop = _mapping(event["messageStop"], "messageStop")
            if self._stop_reason is not None:
                raise _MalformedEventError("the stream sent a second messageStop")
            # Not checked against the known reasons: a provider may add one, and the loop
            # treats any reason but tool_use as the end of the turn.
            reason = _str(stop.get("stopReason"), "messageStop.stopReason")
            self._stop_reason = cast("StopReason", reason)
        if "metadata" in event:
            metadata = _mapping(event["metadata"], "metadata")
            # Fresh dicts: the caller may keep and mutate its events.
            self._metadata_usage = _usage(_mapping(metadata.get("usage"), "metadata.usage"))
            metrics = _mapping(metadata.get("metrics"), "metadata.metrics")
            self._metrics = Metrics(
                latencyMs=_int(metrics.get("latencyMs"), "metadata.metrics.latencyMs")
            )

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
    def _apply_delta(block: _Block, delta: Mapping[str, object]) -> None:
        kinds = [key for key in delta if key in _DELTA_TYPES]
        if len(kinds) != 1 or len(delta) != 1:
            raise _MalformedEventError(
                f"a delta has exactly one of the keys {', '.join(_DELTA_TYPES)}, "
                f"got {sorted(delta)}"
            )
        if "text" in delta:
            block.claim("text")
            block.text.append(_str(delta["text"], "the text delta"))
        elif "reasoningContent" in delta:
            block.claim("reasoning")
            reasoning = _mapping(delta["reasoningContent"], "the reasoningContent delta")
            if "text" in reasoning:
                block.text.append(_str(reasoning["text"], "reasoningContent.text"))
            if "signature" in reasoning:
                block.signature.append(_str(reasoning["signature"], "reasoningContent.signature"))
            if "redactedContent" in reasoning:
                block.redacted.append(
                    _str(reasoning["redactedContent"], "reasoningContent.redactedContent")
                )
        else:
            block.claim("tool_use")
            tool_use = _mapping(delta["toolUse"], "the toolUse delta")
            block.text.append(_str(tool_use.get("input"), "toolUse.input"))


# -- checking a model's events: each helper says what it expected ------------------------


def _mapping(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _MalformedEventError(f"{what} must be a dict, got {_describe(value)}")
    return cast("Mapping[str, object]", value)


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _MalformedEventError(f"{what} must be a str, got {_describe(value)}")
    return value


def _int(value: object, what: str) -> int:
    # bool is an int to Python, not to a token count.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _MalformedEventError(f"{what} must be an int, got {_describe(value)}")
    return value


def _block_index(event: Mapping[str, object], what: str) -> int | None:
    index = event.get("contentBlockIndex")
    return None if index is None else _int(index, f"{what}.contentBlockIndex")


def _usage(usage: Mapping[str, object]) -> Usage:
    checked = Usage(
        inputTokens=_int(usage.get("inputTokens"), "usage.inputTokens"),
        outputTokens=_int(usage.get("outputTokens"), "usage.outputTokens"),
        totalTokens=_int(usage.get("totalTokens"), "usage.totalTokens"),
    )
    if "cacheReadInputTokens" in usage:
        checked["cacheReadInputTokens"] = _int(
            usage["cacheReadInputTokens"], "usage.cacheReadInputTokens"
        )
    if "cacheWriteInputTokens" in usage:
        checked["cacheWriteInputTokens"] = _int(
            usage["cacheWriteInputTokens"], "usage.cacheWriteInputTokens"
        )
    return checked


def _describe(value: object) -> str:
    return "None" if value is None else f"{type(value).__name__} {_short_repr(value)}"


def _short_repr(value: object) -> str:
    return shorten(repr(value), _MAX_EVENT_REPR)


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


def check_tool_use_ids(message: Message) -> None:
    """Refuse a model turn whose tool calls repeat a ``toolUseId``.

    Tool results are matched to their calls by id, in every model API and in this host
    (a resumed round, an approval): two calls under one id are ambiguous, so such a turn
    must not enter the history, and none of its tools may run.

    Raises:
        StreamAssemblyError: Naming the first repeated id and the tools called under it.
    """
    names: dict[str, list[str]] = {}
    for block in message["content"]:
        if "toolUse" in block:
            use = block["toolUse"]
            names.setdefault(use["toolUseId"], []).append(use["name"])
    for tool_use_id, called in names.items():
        if len(called) > 1:
            raise StreamAssemblyError(
                f"the model turn calls {len(called)} tools under one toolUseId "
                f"{tool_use_id!r} ({', '.join(called)}): tool results are matched to calls "
                "by id, so the turn is refused; it was not added to the history and none of "
                "its tools ran"
            )


def _parse_tool_input(raw: str) -> Any:
    """Parse streamed tool input; keep unparsable input as the raw string (see the class)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    # A JSON string is no tool input either; kept as the raw text, quotes and all, so that
    # it is replayed as sent, not mistaken for the raw text of invalid JSON.
    return raw if isinstance(value, str) else value


async def collect_response(events: AsyncIterable[StreamEvent]) -> CollectedResponse:
    """Drain *events* and return what they amount to (see :class:`ResponseAssembler`)."""
    assembler = ResponseAssembler()
    async for event in events:
        assembler.add(event)
    return assembler.finish()
