"""Conversion between Converse payloads and OpenAI chat completions, with no I/O.

Requests go one way (Converse messages, tool specs and tool choice to the typed dicts of
``openai.types.chat``); responses the other (streamed ``ChatCompletionChunk`` objects to
Converse ``StreamEvent`` dicts, through ``StreamTranslator``). ``_openai`` does the
network part; keeping this side pure lets it be read and tested on its own.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, final

from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall

from stageware._generated.payloads import (
    ContentBlock,
    ContentBlockDelta,
    Message,
    Messages,
    MessageStopEvent,
    StopReason,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolResult,
    ToolSpec,
    Usage,
)
from stageware._host._shorten import shorten

__all__ = [
    "IncompleteStreamError",
    "StreamFormatError",
    "StreamTranslator",
    "convert_messages",
    "convert_tool_choice",
    "convert_tool_specs",
]

# Prefix that makes a failed tool call visible to the model: chat completions' tool messages
# have no status field, only text.
TOOL_ERROR_PREFIX = "Error: "

# `json.dumps(value, ensure_ascii=False)`, without building an encoder on every call (which
# costs as much as encoding a tool call's arguments); it runs for every tool call and
# result of the history on every request.
_to_json = json.JSONEncoder(ensure_ascii=False).encode

# Blocks with no counterpart in chat completions. Reasoning is the provider's own record of
# an earlier turn (OpenAI-compatible servers neither need nor accept it back); cache points
# are a Converse prompt-caching hint with no equivalent here.
_DROPPED_KEYS = frozenset({"reasoningContent", "cachePoint"})


# --- request: Converse -> OpenAI ---------------------------------------------------------


def convert_messages(
    messages: Messages,
    system_prompt: str | None = None,
    system_prompt_content: list[SystemContentBlock] | None = None,
) -> list[ChatCompletionMessageParam]:
    """The chat-completions ``messages`` for a Converse conversation and system prompt.

    When both system forms are given, ``system_prompt_content`` wins: the host passes the
    same prompt as a string and as blocks, and sending both would duplicate it.
    """
    converted: list[ChatCompletionMessageParam] = []
    system_text = _system_text(system_prompt, system_prompt_content)
    if system_text:
        converted.append({"role": "system", "content": system_text})
    for position, message in enumerate(messages):
        try:
            if message["role"] == "assistant":
                converted.extend(_assistant_messages(message))
            else:
                converted.extend(_user_messages(message))
        except ValueError as error:
            raise ValueError(f"messages[{position}] ({message['role']}): {error}") from None
    return converted


def convert_tool_specs(tool_specs: list[ToolSpec]) -> list[ChatCompletionFunctionToolParam]:
    """Converse tool specs as chat-completions function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec["name"],
                "description": spec["description"],
                "parameters": spec["inputSchema"]["json"],
            },
        }
        for spec in tool_specs
    ]


def convert_tool_choice(tool_choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
    """A Converse tool choice as the chat-completions ``tool_choice`` option."""
    match tool_choice:
        case {"tool": {"name": str() as name}}:
            return {"type": "function", "function": {"name": name}}
        case {"any": _}:
            return "required"
        case _:
            return "auto"


def _system_text(
    system_prompt: str | None, system_prompt_content: list[SystemContentBlock] | None
) -> str:
    if system_prompt_content is None:
        return system_prompt or ""
    # One string rather than text parts: several OpenAI-compatible servers accept only a
    # string as system content.
    return "\n".join(block["text"] for block in system_prompt_content if "text" in block)


def _user_messages(message: Message) -> list[ChatCompletionMessageParam]:
    # Tool results become `tool` messages, which must directly follow the assistant message
    # that made the calls; any text or images of the same turn go after them as a user message.
    tool_messages: list[ChatCompletionMessageParam] = []
    parts: list[ChatCompletionContentPartParam] = []
    for block in message["content"]:
        kind = _block_kind(block)
        if "toolResult" in block:
            tool_messages.append(_tool_message(block["toolResult"]))
        elif "text" in block:
            parts.append({"type": "text", "text": block["text"]})
        elif "image" in block:
            image = block["image"]
            url = f"data:image/{image['format']};base64,{image['source']['bytes']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif kind not in _DROPPED_KEYS:
            raise ValueError(f"a {kind!r} block cannot be sent in a user message")
    if parts:
        return [*tool_messages, {"role": "user", "content": parts}]
    return tool_messages


def _assistant_messages(message: Message) -> list[ChatCompletionMessageParam]:
    texts: list[str] = []
    tool_calls: list[ChatCompletionMessageFunctionToolCallParam] = []
    for block in message["content"]:
        kind = _block_kind(block)
        if "text" in block:
            texts.append(block["text"])
        elif "toolUse" in block:
            tool_use = block["toolUse"]
            tool_calls.append(
                {
                    "id": tool_use["toolUseId"],
                    "type": "function",
                    "function": {
                        "name": tool_use["name"],
                        "arguments": _tool_arguments(tool_use["input"]),
                    },
                }
            )
        elif kind not in _DROPPED_KEYS:
            raise ValueError(f"a {kind!r} block cannot be sent in an assistant message")
    if not texts and not tool_calls:
        # Only dropped blocks (reasoning): an empty assistant message is rejected by servers.
        return []
    assistant: ChatCompletionAssistantMessageParam = {"role": "assistant"}
    if texts:
        # A string rather than text parts, for servers that accept only strings here. When
        # there are only tool calls, `content` is left out rather than null: chat templates
        # of local servers render a null as the text "None".
        assistant["content"] = "\n".join(texts)
    if tool_calls:
        assistant["tool_calls"] = tool_calls
    return [assistant]


def _tool_arguments(tool_input: Any) -> str:
    """The ``arguments`` string of a tool call in the history.

    A string input is arguments the model sent that were not valid JSON (the stream
    assembler keeps them raw; chat-completions arguments are always a JSON object). They
    go back as the model sent them: encoding them again would show the model a string
    literal it never wrote, next to the error result that reported them.
    """
    if isinstance(tool_input, str):
        return tool_input
    return _to_json(tool_input)


def _tool_message(result: ToolResult) -> ChatCompletionToolMessageParam:
    pieces: list[str] = []
    for item in result["content"]:
        if "text" in item:
            pieces.append(item["text"])
        elif "json" in item:
            pieces.append(_to_json(item["json"]))
        elif "image" in item:
            # Tool messages carry text only. Say so rather than drop the image silently.
            pieces.append(f"[{item['image']['format']} image omitted: not supported here]")
    text = "\n".join(pieces)
    # The host's own error results already start with "Error:"; say it once.
    if result["status"] == "error" and not text.startswith(TOOL_ERROR_PREFIX):
        text = TOOL_ERROR_PREFIX + text
    return {"role": "tool", "tool_call_id": result["toolUseId"], "content": text}


def _block_kind(block: ContentBlock) -> str:
    if len(block) != 1:
        raise ValueError(f"a content block must have exactly one key, got {list(block)}")
    return next(iter(block))


# --- response: OpenAI stream -> Converse events ------------------------------------------


class StreamFormatError(ValueError):
    """The server's stream cannot be expressed as Converse events (it broke the protocol)."""


class IncompleteStreamError(StreamFormatError):
    """The server's stream ended before it said the response was complete."""


# How much of a malformed chunk an error message quotes.
_MAX_CHUNK_REPR = 300

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}


@dataclass
class _ToolCall:
    """What the stream has said so far about one tool call (one OpenAI ``index``)."""

    id: str | None = None
    name: str | None = None
    # Argument fragments not yet emitted, held while another block is open.
    pending: list[str] = field(default_factory=list[str])
    # Everything received, to tell whether the arguments are complete JSON.
    arguments: str = ""
    state: Literal["waiting", "open", "closed"] = "waiting"


@final
class StreamTranslator:
    """Turns the chunks of one streamed chat completion into Converse stream events.

    Converse blocks are sequential, OpenAI tool calls are keyed by ``index``. Servers send
    one tool call after another, so a fragment for a new index normally closes the open
    block and starts the next. A few interleave fragments of several calls; then the new
    call is held back until the open one's arguments are complete JSON (or the stream ends),
    so no block is closed while its input is still arriving. Only choice 0 is read.

    A stream that never sent a choice, or ended without a finish reason, was cut short
    (a proxy that dropped the connection cleanly, a server that crashed mid-answer):
    ``finish`` raises ``IncompleteStreamError`` rather than pass it off as a whole answer.
    """

    def __init__(self) -> None:
        self._next_block = 0
        # The open block: ("text" | "reasoning", None) or ("tool", OpenAI tool index).
        self._open: tuple[Literal["text", "reasoning", "tool"], int | None] | None = None
        self._open_index = -1
        self._tools: dict[int, _ToolCall] = {}
        self._finish_reason: str | None = None
        self._usage: CompletionUsage | None = None
        self._chunks = 0
        self._choices = 0

    def start(self) -> list[StreamEvent]:
        """The events that open the message."""
        return [{"messageStart": {"role": "assistant"}}]

    def feed(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        """The events for one chunk, possibly none.

        Raises:
            StreamFormatError: The chunk breaks the protocol, or is not a chunk at all.
        """
        try:
            return self._feed(chunk)
        except (AttributeError, TypeError) as error:
            # `openai` builds chunks from the server's JSON without validating them, so
            # JSON of another shape fails only when a field is read.
            raise StreamFormatError(
                f"a chunk that is not a chat.completion.chunk "
                f"({type(error).__name__}: {error}): {shorten(repr(chunk), _MAX_CHUNK_REPR)}"
            ) from error

    def _feed(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        self._chunks += 1
        if chunk.usage is not None:
            self._usage = chunk.usage
        events: list[StreamEvent] = []
        # A chunk without choices is normal (the usage chunk; Azure's content-filter
        # results first); a stream that never has one is not.
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            self._choices += 1
            events += self._delta(choice.delta)
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
        return events

    def finish(self, latency_ms: int) -> list[StreamEvent]:
        """The events that end the message, once the server has ended the stream.

        Raises:
            IncompleteStreamError: The stream had no chunk, no choice or no finish reason.
        """
        if self._chunks == 0:
            raise IncompleteStreamError("the response stream ended before its first chunk")
        if self._choices == 0:
            raise IncompleteStreamError(
                f"the response had no choices: none of its {self._chunks} chunk(s) carried one"
            )
        if self._finish_reason is None:
            raise IncompleteStreamError(
                "the response stream ended without a finish reason, so the answer may be cut short"
            )
        events = self._close_open()
        for tool_index in sorted(self._tools):
            if self._tools[tool_index].state == "waiting":
                events += self._open_tool(tool_index)
                events += self._close_open()
        events.append({"messageStop": self._message_stop()})
        events.append(
            {"metadata": {"usage": self._usage_dict(), "metrics": {"latencyMs": latency_ms}}}
        )
        return events

    # -- deltas

    def _delta(self, delta: ChoiceDelta) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        # Reasoning from servers that put it beside the answer (vLLM and llama.cpp use
        # `reasoning_content`, others `reasoning`); not part of OpenAI's own schema.
        extra = delta.model_extra or {}
        reasoning: Any = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events += self._switch_to("reasoning")
            events.append(self._block_delta({"reasoningContent": {"text": reasoning}}))
        # A refusal is the model's answer in another field; the user should see it as text.
        for text in (delta.content, delta.refusal):
            if text:
                events += self._switch_to("text")
                events.append(self._block_delta({"text": text}))
        for tool_call in delta.tool_calls or []:
            events += self._tool_fragment(tool_call)
        return events

    def _tool_fragment(self, fragment: ChoiceDeltaToolCall) -> list[StreamEvent]:
        call = self._tools.setdefault(fragment.index, _ToolCall())
        if fragment.id and call.id is None:
            call.id = fragment.id
        if fragment.function is not None and fragment.function.name and call.name is None:
            call.name = fragment.function.name
        arguments = fragment.function.arguments if fragment.function is not None else None
        arguments = arguments or ""
        if call.state == "closed":
            # Some servers repeat the id and name on every fragment; that is harmless.
            if arguments.strip():
                raise StreamFormatError(
                    f"tool call {fragment.index} got more arguments after its block was "
                    f"closed: {call.arguments!r} + {arguments!r}"
                )
            return []
        call.arguments += arguments
        if call.state == "open":
            return [self._block_delta({"toolUse": {"input": arguments}})] if arguments else []
        if arguments:
            call.pending.append(arguments)
        if call.name is None or not self._may_leave_open_block():
            return []
        return self._close_open() + self._open_tool(fragment.index)

    def _may_leave_open_block(self) -> bool:
        if self._open is None or self._open[0] != "tool":
            return True
        assert self._open[1] is not None
        try:
            json.loads(self._tools[self._open[1]].arguments)
        except ValueError:
            return False
        return True

    # -- blocks

    def _switch_to(self, kind: Literal["text", "reasoning"]) -> list[StreamEvent]:
        if self._open is not None and self._open[0] == kind:
            return []
        events = self._close_open()
        self._open = (kind, None)
        self._open_index = self._take_block_index()
        return events

    def _open_tool(self, tool_index: int) -> list[StreamEvent]:
        call = self._tools[tool_index]
        if call.name is None:
            raise StreamFormatError(f"tool call {tool_index} ended without a function name")
        if call.id is None:
            # Some local servers omit ids; the host needs one to pair the result.
            call.id = f"call_{uuid.uuid4().hex}"
        call.state = "open"
        self._open = ("tool", tool_index)
        self._open_index = self._take_block_index()
        events: list[StreamEvent] = [
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": call.id, "name": call.name}},
                    "contentBlockIndex": self._open_index,
                }
            }
        ]
        if call.pending:
            events.append(self._block_delta({"toolUse": {"input": "".join(call.pending)}}))
            call.pending.clear()
        return events

    def _close_open(self) -> list[StreamEvent]:
        if self._open is None:
            return []
        kind, tool_index = self._open
        if kind == "tool":
            assert tool_index is not None
            self._tools[tool_index].state = "closed"
        self._open = None
        return [{"contentBlockStop": {"contentBlockIndex": self._open_index}}]

    def _take_block_index(self) -> int:
        index = self._next_block
        self._next_block += 1
        return index

    def _block_delta(self, delta: ContentBlockDelta) -> StreamEvent:
        return {"contentBlockDelta": {"delta": delta, "contentBlockIndex": self._open_index}}

    # -- end of message

    def _message_stop(self) -> MessageStopEvent:
        raw = self._finish_reason
        assert raw is not None  # finish() refused a stream without one
        if raw == "stop" and self._tools:
            # "stop" after tool calls (some local servers report that): the host runs
            # tools only on tool_use, so go by what the stream contained.
            return {"stopReason": "tool_use"}
        stop_reason = _FINISH_REASONS.get(raw)
        if stop_reason is None:
            # A server-specific reason: end the turn, but keep the original for callers.
            return {
                "stopReason": "end_turn",
                "additionalModelResponseFields": {"finish_reason": raw},
            }
        return {"stopReason": stop_reason}

    def _usage_dict(self) -> Usage:
        usage = self._usage
        if usage is None:
            # Servers that ignore `stream_options.include_usage` send none; the host still
            # expects one metadata event.
            return {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
        converted: Usage = {
            "inputTokens": usage.prompt_tokens,
            "outputTokens": usage.completion_tokens,
            "totalTokens": usage.total_tokens,
        }
        cache_read, cache_write = _cache_tokens(usage)
        if cache_read is not None:
            converted["cacheReadInputTokens"] = cache_read
        if cache_write is not None:
            converted["cacheWriteInputTokens"] = cache_write
        return converted


def _cache_tokens(usage: CompletionUsage) -> tuple[int | None, int | None]:
    """Prompt-cache reads and writes, wherever the server put them.

    OpenAI reports reads as ``prompt_tokens_details.cached_tokens`` and has no writes.
    Proxies in front of providers that bill cache writes add them: OpenRouter as
    ``prompt_tokens_details.cache_write_tokens``, LiteLLM as the top-level
    ``cache_creation_input_tokens`` (with reads as ``cache_read_input_tokens``).
    """
    details = usage.prompt_tokens_details
    # A dump, not attributes: whether `cache_write_tokens` is a declared field or an
    # extra one depends on the `openai` version.
    detail: dict[str, object] = details.model_dump() if details is not None else {}
    extra = usage.model_extra or {}
    read = _token_count(detail.get("cached_tokens"))
    if read is None:
        read = _token_count(extra.get("cache_read_input_tokens"))
    write = _token_count(detail.get("cache_write_tokens"))
    if write is None:
        write = _token_count(extra.get("cache_creation_input_tokens"))
    return read, write


def _token_count(value: object) -> int | None:
    # Extra fields are untyped JSON; only a count is a count.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
