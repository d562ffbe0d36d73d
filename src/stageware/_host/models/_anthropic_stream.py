"""Anthropic's streamed message events as Converse stream events, with no I/O.

:class:`StreamTranslator` reads the events ``anthropic`` decodes from the SSE stream
(``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``,
``message_stop``) and emits ``messageStart``, the content block events, ``messageStop``
and ``metadata``. Anthropic numbers blocks as Converse does, so its ``index`` is the
``contentBlockIndex``.

- ``text_delta`` is a text delta; ``input_json_delta`` a ``toolUse`` input delta after
  the ``contentBlockStart`` naming the tool; ``thinking_delta`` and ``signature_delta``
  are ``reasoningContent`` deltas (text, signature), a ``redacted_thinking`` block one
  ``redactedContent`` delta. Citations are not read (the adapter sends no documents).
- Usage: ``input_tokens``, ``output_tokens``, and the prompt cache's
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` as
  ``cacheReadInputTokens`` and ``cacheWriteInputTokens``. Anthropic's ``input_tokens``
  leaves the cached tokens out; ``totalTokens`` counts all four.
- Stop reasons: see ``_STOP_REASONS``. A refusal is ``content_filtered`` (the provider's
  safety system ended the answer); ``pause_turn`` ends the turn. Either keeps Anthropic's
  own reason (and a refusal's details) in ``additionalModelResponseFields``.

A stream that ends without ``message_stop`` was cut short; :meth:`StreamTranslator.finish`
raises ``IncompleteStreamError`` rather than pass it off as a whole answer. A
``model_context_window_exceeded`` stop is ``ContextWindowFilledError``: the answer was
cut off by the context window, which the caller reports as an overflow.
"""

from __future__ import annotations

from typing import Any, Final, final

from stageware._generated.payloads import (
    ContentBlockDelta,
    MessageStopEvent,
    StopReason,
    StreamEvent,
    Usage,
)
from stageware._host._shorten import shorten

__all__ = [
    "ContextWindowFilledError",
    "IncompleteStreamError",
    "StreamFormatError",
    "StreamTranslator",
]

_STOP_REASONS: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "content_filtered",
    "pause_turn": "end_turn",
}
# Stop reasons whose Converse form loses something; the original goes along.
_KEPT_REASONS: Final = frozenset({"refusal", "pause_turn"})
# How much of a malformed event an error message quotes.
_MAX_EVENT_REPR: Final = 300


class StreamFormatError(ValueError):
    """The server's stream cannot be expressed as Converse events (it broke the protocol)."""


class IncompleteStreamError(StreamFormatError):
    """The server's stream ended before it said the message was complete."""


class ContextWindowFilledError(Exception):
    """The model stopped because the context window was full (``model_context_window_exceeded``)."""


@final
class StreamTranslator:
    """Turns the events of one streamed Anthropic message into Converse stream events."""

    def __init__(self) -> None:
        self._started = False
        self._stopped = False
        self._stop_reason: str | None = None
        self._stop_details: dict[str, Any] | None = None
        self._open: dict[int, str] = {}
        self._usage: dict[str, int] = {}

    def feed(self, event: object) -> list[StreamEvent]:
        """The Converse events for one Anthropic event, possibly none.

        Raises:
            StreamFormatError: The event breaks the protocol, or is not a message event.
        """
        try:
            return self._feed(event)
        except (AttributeError, TypeError, KeyError) as error:
            # `anthropic` builds events from the server's JSON without validating them,
            # so JSON of another shape fails only when a field is read.
            raise StreamFormatError(
                f"an event that is not a message stream event ({type(error).__name__}: "
                f"{error}): {shorten(repr(event), _MAX_EVENT_REPR)}"
            ) from error

    def finish(self, latency_ms: int) -> list[StreamEvent]:
        """The events that end the message, once the server has ended the stream.

        Raises:
            IncompleteStreamError: The stream ended before ``message_stop``.
            ContextWindowFilledError: The model stopped at the end of its context window.
        """
        if not self._started:
            raise IncompleteStreamError("the response stream ended before message_start")
        if not self._stopped:
            raise IncompleteStreamError(
                "the response stream ended without message_stop, so the answer may be cut short"
            )
        if self._stop_reason is None:
            raise IncompleteStreamError("the message ended without a stop reason")
        if self._stop_reason == "model_context_window_exceeded":
            raise ContextWindowFilledError(
                "the model stopped because its context window is full "
                "(stop reason model_context_window_exceeded)"
            )
        return [
            {"messageStop": self._message_stop()},
            {"metadata": {"usage": self._usage_dict(), "metrics": {"latencyMs": latency_ms}}},
        ]

    # -- events

    def _feed(self, event: Any) -> list[StreamEvent]:
        kind = event.type
        if kind == "message_start":
            if self._started:
                raise StreamFormatError("a second message_start in one stream")
            self._started = True
            self._take_usage(event.message.usage)
            return [{"messageStart": {"role": "assistant"}}]
        if not self._started:
            raise StreamFormatError(f"a {kind} event before message_start")
        if self._stopped:
            raise StreamFormatError(f"a {kind} event after message_stop")
        if kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        if kind == "content_block_delta":
            return self._block_delta(event.index, event.delta)
        if kind == "content_block_stop":
            index: int = event.index
            if self._open.pop(index, None) is None:
                raise StreamFormatError(f"content_block_stop for block {index}, which is not open")
            return [{"contentBlockStop": {"contentBlockIndex": index}}]
        if kind == "message_delta":
            if event.delta.stop_reason is not None:
                self._stop_reason = str(event.delta.stop_reason)
            if event.delta.stop_details is not None:
                self._stop_details = event.delta.stop_details.model_dump(exclude_none=True)
            self._take_usage(event.usage)
            return []
        if kind == "message_stop":
            if self._open:
                raise StreamFormatError(f"message_stop while blocks {sorted(self._open)} are open")
            self._stopped = True
            return []
        raise StreamFormatError(f"an unknown event type {kind!r}")

    def _block_start(self, index: int, block: Any) -> list[StreamEvent]:
        kind: str = block.type
        if index in self._open:
            raise StreamFormatError(f"content_block_start for block {index}, which is open")
        self._open[index] = kind
        if kind == "tool_use":
            start: StreamEvent = {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": block.id, "name": block.name}},
                    "contentBlockIndex": index,
                }
            }
            return [start]
        if kind == "text":
            return [self._delta(index, {"text": block.text})] if block.text else []
        if kind == "thinking":
            # The thinking text and its signature arrive as deltas; the start carries none.
            return []
        if kind == "redacted_thinking":
            return [self._delta(index, {"reasoningContent": {"redactedContent": block.data}})]
        raise StreamFormatError(
            f"a {kind!r} content block, which this adapter does not support "
            "(server tools and other block types are not mapped to Converse)"
        )

    def _block_delta(self, index: int, delta: Any) -> list[StreamEvent]:
        block_kind = self._open.get(index)
        kind: str = delta.type
        if block_kind is None:
            raise StreamFormatError(f"a {kind} for block {index}, which is not open")
        expected = {
            "text_delta": "text",
            "input_json_delta": "tool_use",
            "thinking_delta": "thinking",
            "signature_delta": "thinking",
            "citations_delta": "text",
        }.get(kind)
        if expected is None:
            raise StreamFormatError(f"an unknown delta type {kind!r}")
        if expected != block_kind:
            raise StreamFormatError(f"a {kind} for block {index}, a {block_kind} block")
        if kind == "text_delta":
            return [self._delta(index, {"text": delta.text})] if delta.text else []
        if kind == "input_json_delta":
            partial: str = delta.partial_json
            return [self._delta(index, {"toolUse": {"input": partial}})] if partial else []
        if kind == "thinking_delta":
            thinking: str = delta.thinking
            return (
                [self._delta(index, {"reasoningContent": {"text": thinking}})] if thinking else []
            )
        if kind == "signature_delta":
            return [self._delta(index, {"reasoningContent": {"signature": delta.signature}})]
        return []  # citations_delta: no Converse counterpart, and no documents are sent.

    @staticmethod
    def _delta(index: int, delta: ContentBlockDelta) -> StreamEvent:
        return {"contentBlockDelta": {"delta": delta, "contentBlockIndex": index}}

    # -- end of message

    def _take_usage(self, usage: Any) -> None:
        """Keep the counts *usage* reports: ``message_delta`` repeats them, cumulatively."""
        if usage is None:
            return
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                self._usage[name] = value

    def _message_stop(self) -> MessageStopEvent:
        raw = self._stop_reason
        assert raw is not None  # finish() refused a message without one
        stop_reason = _STOP_REASONS.get(raw)
        if stop_reason is None or raw in _KEPT_REASONS:
            fields: dict[str, Any] = {"stop_reason": raw}
            if self._stop_details:
                fields["stop_details"] = self._stop_details
            # An unknown reason (a newer API) ends the turn; the original goes along.
            return {
                "stopReason": stop_reason or "end_turn",
                "additionalModelResponseFields": fields,
            }
        return {"stopReason": stop_reason}

    def _usage_dict(self) -> Usage:
        counts = self._usage
        input_tokens = counts.get("input_tokens", 0)
        output_tokens = counts.get("output_tokens", 0)
        read = counts.get("cache_read_input_tokens")
        write = counts.get("cache_creation_input_tokens")
        usage: Usage = {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens + (read or 0) + (write or 0),
        }
        if read is not None:
            usage["cacheReadInputTokens"] = read
        if write is not None:
            usage["cacheWriteInputTokens"] = write
        return usage
