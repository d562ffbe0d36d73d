"""ConverseStream events as botocore decodes them, made into the host's ``StreamEvent`` s.

Bedrock streams Converse events already; this module keeps what the payload types
describe and drops the rest, so that the events the host and middleware see are the ones
their types promise:

- kept: ``messageStart``; ``contentBlockStart`` of a tool use; text, tool-input and
  reasoning deltas (redacted reasoning as base64 text, as the history holds it);
  ``contentBlockStop``; ``messageStop`` with its ``additionalModelResponseFields``;
  ``metadata`` usage (with the cache read and write counts) and latency, and the
  guardrail ``trace`` (see :func:`_metadata`).
- dropped: citation, image and tool-result deltas and the blocks they start (the payload
  types have no such blocks), and a block's stop when nothing of it was kept; metadata's
  ``performanceConfig``, ``serviceTier`` and usage details beyond the counts.

A stop reason the host cannot continue from is an error, not an answer:
``model_context_window_exceeded`` is a ``ContextWindowOverflowError`` (the next call
would overflow too) and ``malformed_model_output`` / ``malformed_tool_use`` a
``ModelError``. A stream that ends without ``messageStop`` or without ``metadata`` was cut
short (:meth:`EventTranslator.finish`). botocore decodes the frames but requires none of
an event's fields, so an event that lacks a field or has one of the wrong type, and events
out of order (anything before ``messageStart`` or after ``messageStop`` but the
``metadata``, a second ``messageStart``), are a malformed stream, not a ``KeyError``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final, cast, final

from stageware._generated.payloads import (
    ContentBlockDelta,
    MessageStopEvent,
    MetadataEvent,
    StopReason,
    StreamEvent,
    Usage,
)

from ._bedrock_errors import Failure, StreamFailedError

__all__ = ["EventTranslator"]

_USAGE_KEYS: Final = (
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cacheReadInputTokens",
    "cacheWriteInputTokens",
)
# The event kinds of a ConverseStream response that the payload types describe.
_EVENT_KINDS: Final = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
)
_MALFORMED_STOPS: Final = {
    "malformed_model_output": "the model's output was malformed",
    "malformed_tool_use": "the model's tool call was malformed",
}


@final
class EventTranslator:
    """Turns one response's decoded events into ``StreamEvent`` s, one at a time."""

    __slots__ = ("_kept_blocks", "_saw_metadata", "_saw_start", "_saw_stop")

    def __init__(self) -> None:
        self._kept_blocks: set[int] = set()
        self._saw_start = False
        self._saw_stop = False
        self._saw_metadata = False

    def feed(self, event: Mapping[str, Any]) -> StreamEvent | None:
        """The event to pass on for *event*, or ``None`` when nothing of it is kept.

        Raises:
            StreamFailedError: A stop reason the host cannot continue from, or an event
                that is malformed or out of order.
        """
        try:
            return self._translate(event)
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            # A field missing or of the wrong type: botocore parses each event by the
            # service's shapes but requires none of their fields.
            kind = next((name for name in _EVENT_KINDS if name in event), "unknown")
            raise StreamFailedError(
                Failure(
                    f"malformed response stream: a {kind} event lacks a field or has one "
                    f"of the wrong type ({type(error).__name__}: {error})"
                )
            ) from None

    def _translate(self, event: Mapping[str, Any]) -> StreamEvent | None:
        kind = next((name for name in _EVENT_KINDS if name in event), None)
        if kind is None:
            # An event type newer than the payload types.
            return None
        self._check_order(kind)
        if kind == "messageStart":
            return {"messageStart": {"role": event["messageStart"]["role"]}}
        if kind == "contentBlockStart":
            return self._block_start(event["contentBlockStart"])
        if kind == "contentBlockDelta":
            return self._block_delta(event["contentBlockDelta"])
        if kind == "contentBlockStop":
            index = _index(event["contentBlockStop"])
            if index not in self._kept_blocks:
                return None
            return {"contentBlockStop": {"contentBlockIndex": index}}
        if kind == "messageStop":
            stop = _message_stop(event["messageStop"])
            self._saw_stop = True
            return {"messageStop": stop}
        metadata = _metadata(event["metadata"])
        self._saw_metadata = True
        return {"metadata": metadata}

    def _check_order(self, kind: str) -> None:
        """Refuse an event where a ConverseStream response never has one."""
        problem = None
        if kind == "messageStart" and self._saw_start:
            problem = "a second messageStart"
        elif kind == "metadata" and self._saw_metadata:
            problem = "a second metadata event"
        elif kind == "metadata" and not self._saw_stop:
            problem = "a metadata event before messageStop"
        elif kind != "metadata" and kind != "messageStart" and not self._saw_start:
            problem = f"a {kind} event before messageStart"
        elif kind != "metadata" and self._saw_stop:
            problem = f"a {kind} event after messageStop"
        if problem is not None:
            raise StreamFailedError(Failure(f"malformed response stream: {problem}"))
        if kind == "messageStart":
            self._saw_start = True

    def finish(self) -> None:
        """Check that the stream ended as a complete ConverseStream response does.

        Raises:
            StreamFailedError: The stream ended before ``messageStop`` or ``metadata``.
        """
        missing = [
            name
            for name, seen in (("messageStop", self._saw_stop), ("metadata", self._saw_metadata))
            if not seen
        ]
        if missing:
            raise StreamFailedError(
                Failure(f"the response stream ended early, without {' and '.join(missing)}")
            )

    def _block_start(self, start_event: Mapping[str, Any]) -> StreamEvent | None:
        index = _index(start_event)
        tool_use = start_event.get("start", {}).get("toolUse")
        if tool_use is None:
            # A block kind the payload types do not have (an image, a tool result).
            return None
        self._kept_blocks.add(index)
        return {
            "contentBlockStart": {
                "start": {
                    "toolUse": {"toolUseId": tool_use["toolUseId"], "name": tool_use["name"]}
                },
                "contentBlockIndex": index,
            }
        }

    def _block_delta(self, delta_event: Mapping[str, Any]) -> StreamEvent | None:
        index = _index(delta_event)
        delta = delta_event["delta"]
        kept: ContentBlockDelta
        if "text" in delta:
            kept = {"text": delta["text"]}
        elif "toolUse" in delta:
            kept = {"toolUse": {"input": delta["toolUse"]["input"]}}
        elif "reasoningContent" in delta:
            reasoning = delta["reasoningContent"]
            if "text" in reasoning:
                kept = {"reasoningContent": {"text": reasoning["text"]}}
            elif "signature" in reasoning:
                kept = {"reasoningContent": {"signature": reasoning["signature"]}}
            elif "redactedContent" in reasoning:
                # botocore decodes the blob; the history holds it as base64 text.
                encoded = base64.b64encode(reasoning["redactedContent"]).decode("ascii")
                kept = {"reasoningContent": {"redactedContent": encoded}}
            else:
                return None
        else:
            # Citations, images, tool results: no payload type carries them.
            return None
        self._kept_blocks.add(index)
        return {"contentBlockDelta": {"delta": kept, "contentBlockIndex": index}}


def _index(block_event: Mapping[str, Any]) -> int:
    index = block_event["contentBlockIndex"]
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise TypeError(f"contentBlockIndex is {index!r}, not a block's position")
    return index


def _message_stop(stop: Mapping[str, Any]) -> MessageStopEvent:
    reason = stop["stopReason"]
    if not isinstance(reason, str):
        raise TypeError(f"stopReason is {reason!r}, not a string")
    if reason == "model_context_window_exceeded":
        raise StreamFailedError(
            Failure(
                "the conversation filled the model's context window before the answer "
                "ended (stop reason model_context_window_exceeded)",
                context_overflow=True,
            )
        )
    if reason in _MALFORMED_STOPS:
        raise StreamFailedError(Failure(f"{_MALFORMED_STOPS[reason]} (stop reason {reason})"))
    # Any other reason passes as the service named it, as the assembler expects: the known
    # ones are the payload type's, and one Bedrock adds later is still worth reporting.
    kept: MessageStopEvent = {"stopReason": cast("StopReason", reason)}
    fields = stop.get("additionalModelResponseFields")
    if fields is not None:
        kept["additionalModelResponseFields"] = fields
    return kept


def _metadata(metadata: Mapping[str, Any]) -> MetadataEvent:
    usage = metadata.get("usage", {})
    kept: MetadataEvent = {
        "usage": cast("Usage", {key: usage[key] for key in _USAGE_KEYS if key in usage}),
        "metrics": {"latencyMs": metadata.get("metrics", {}).get("latencyMs", 0)},
    }
    trace = metadata.get("trace")
    if trace is not None:
        # The guardrail's assessment (and the prompt router's choice) when the guardrail
        # was configured with `trace`, as Bedrock sent it.
        kept["trace"] = trace
    return kept
