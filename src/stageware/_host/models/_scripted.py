"""A deterministic model that plays back a script, for tests and demos.

``ScriptedModel`` implements stageware's ``Model`` protocol without a network or
an API key: each ``stream`` call plays the next ``ScriptedTurn`` as the exact
Converse event sequence a real provider sends, and records what it was asked as a
``ModelRequest``. Everything it produces (chunking, tool-use ids, token counts) is
a pure function of the script and the request, so tests can assert on it exactly.
"""

from __future__ import annotations

import copy
import json
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, final

import anyio
import anyio.lowlevel

from stageware._generated.payloads import (
    Message,
    Messages,
    StopReason,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
    Usage,
)
from stageware._host._history_copies import common_prefix
from stageware._host._shorten import shorten
from stageware._host._token_estimate import (
    RunningCharacters,
    message_characters,
    request_characters,
    tokens_for_characters,
)

from ._errors import ContextWindowOverflowError

if TYPE_CHECKING:
    from ._output_schema import OutputSchema

__all__ = [
    "ModelRequest",
    "Respond",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ScriptedToolCall",
    "ScriptedTurn",
]

# How much of the last user message an exhaustion error quotes: enough to recognise it.
_QUOTE_LIMIT = 80


def _empty_input() -> dict[str, Any]:
    return {}


@final
@dataclass(frozen=True)
class ScriptedToolCall:
    """A tool call the scripted model makes.

    Attributes:
        name: Name of the tool to call.
        input: The tool's arguments; must be JSON-serialisable, because it is streamed
            as JSON text exactly as a provider would. Defaults to an empty object.
        id: The ``toolUseId``. ``None`` gives the deterministic ``"tooluse_<turn>_<index>"``,
            where ``<turn>`` is the 0-based number of the ``stream`` call and ``<index>``
            the 0-based position of the call within the turn.
    """

    name: str
    input: Any = field(default_factory=_empty_input)
    id: str | None = None

    def __post_init__(self) -> None:
        # Fail when the script is written, not in the middle of a test run.
        try:
            json.dumps(self.input)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"ScriptedToolCall {self.name!r}: input must be JSON-serialisable ({exc})"
            ) from exc


@final
@dataclass(frozen=True)
class ScriptedTurn:
    """One scripted model response.

    Attributes:
        text: The answer text; streamed in ``chunk_size`` pieces. Empty means no text block
            (a turn with no text, reasoning or tool calls streams no content, which the
            host refuses with ``StreamAssemblyError``, as it would a real model's).
        tool_calls: Tool calls the model makes after the text, in order. Stored as a tuple.
        reasoning: Reasoning streamed before the text as a ``reasoningContent`` block;
            ``None`` (or empty) means none.
        stop_reason: The ``messageStop`` reason. ``None`` means ``"tool_use"`` when there
            are tool calls and ``"end_turn"`` otherwise.
        usage: The ``metadata`` usage. ``None`` means a deterministic estimate: input
            tokens are ceil(characters of all text and JSON in the request's messages and
            system prompt / 4), output tokens ceil(characters of the reasoning, text and
            tool-input JSON produced / 4), total their sum.
        error: An exception raised from the stream when this turn is played, after
            ``error_after_chunks`` events have been yielded.
        error_after_chunks: How many stream events (``messageStart`` included) are
            yielded before ``error`` is raised; 0 raises before any event. A count past
            the end of the stream raises after its last event.
    """

    text: str = ""
    tool_calls: Sequence[ScriptedToolCall] = ()
    reasoning: str | None = None
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    error: BaseException | None = None
    error_after_chunks: int = 0

    def __post_init__(self) -> None:
        # A tuple, so a list the script author keeps cannot change the turn afterwards.
        # Frozen dataclass: object.__setattr__ is the sanctioned way to normalise a field.
        object.__setattr__(self, "tool_calls", _tool_call_tuple(self.tool_calls))
        if self.error_after_chunks < 0:
            raise ValueError(
                f"ScriptedTurn.error_after_chunks must be >= 0, got {self.error_after_chunks}"
            )
        if self.error_after_chunks and self.error is None:
            raise ValueError("ScriptedTurn.error_after_chunks is set but there is no error")


def _tool_call_tuple(calls: Iterable[object]) -> tuple[ScriptedToolCall, ...]:
    checked: list[ScriptedToolCall] = []
    for call in calls:
        # Checked at runtime: a dict written for a tool call would otherwise fail later,
        # far from the script, when the turn is played.
        if not isinstance(call, ScriptedToolCall):
            raise TypeError(f"ScriptedTurn.tool_calls holds ScriptedToolCall objects, got {call!r}")
        checked.append(call)
    return tuple(checked)


@final
class ModelRequest:
    """What the scripted model was asked on one ``stream`` call.

    Every field is a deep copy taken when ``stream`` was called, so later changes to the
    conversation do not rewrite the record. Recording stays cheap over a long
    conversation: a request shares the copies of the messages its call had in common with
    the call before (the same messages, equal to what was sent then) and copies only the
    rest, and its ``messages`` list is assembled when first read. A request is read-only,
    and so are the messages it holds: they may be shared with other requests.

    Attributes:
        messages: The conversation sent to the model.
        tool_specs: The tools offered; empty when the caller passed none.
        system_prompt: The system prompt as a string, if given.
        system_prompt_content: The system prompt as content blocks, if given.
        tool_choice: How the model was told to select tools, if given.
        output_schema: The structured output asked for natively (``output_schema=``), if
            any; only a model made with ``structured_output=True`` is asked that way.
    """

    __slots__ = (
        "_added",
        "_earlier",
        "_kept",
        "_messages",
        "_output_schema",
        "_size",
        "_system_prompt",
        "_system_prompt_content",
        "_tool_choice",
        "_tool_specs",
    )

    def __init__(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec],
        system_prompt: str | None,
        system_prompt_content: list[SystemContentBlock] | None,
        tool_choice: ToolChoice | None,
        output_schema: OutputSchema[Any] | None = None,
    ) -> None:
        self._messages: Messages | None = messages
        # What an unread request is assembled from: the first _kept messages of the
        # _earlier request, then _added; _size in all.
        self._earlier: ModelRequest | None = None
        self._kept = 0
        self._added: Sequence[Message] = ()
        self._size = len(messages)
        self._tool_specs = tool_specs
        self._system_prompt = system_prompt
        self._system_prompt_content = system_prompt_content
        self._tool_choice = tool_choice
        self._output_schema = output_schema

    @classmethod
    def _after(
        cls,
        earlier: ModelRequest | None,
        kept: int,
        added: Sequence[Message],
        *,
        tool_specs: list[ToolSpec],
        system_prompt: str | None,
        system_prompt_content: list[SystemContentBlock] | None,
        tool_choice: ToolChoice | None,
        output_schema: OutputSchema[Any] | None = None,
    ) -> ModelRequest:
        """A request whose messages are *earlier*'s first *kept*, then *added*."""
        request = cls(
            [], tool_specs, system_prompt, system_prompt_content, tool_choice, output_schema
        )
        request._messages = None
        request._earlier = earlier
        request._kept = kept
        request._added = added
        request._size = kept + len(added)
        return request

    @property
    def messages(self) -> Messages:
        """The conversation sent to the model."""
        if self._messages is None:
            self._messages = self._assemble()
        return self._messages

    def _assemble(self) -> Messages:
        # Walk back along the earlier requests (iteratively: a script may be long), taking
        # from each the part of the conversation it added, until the start is covered.
        parts: list[Sequence[Message]] = []
        request: ModelRequest | None = self
        end = self._size
        while request is not None and end > 0:
            if request._messages is not None:
                parts.append(request._messages[:end])
                break
            if end > request._kept:
                parts.append(request._added[: end - request._kept])
                end = request._kept
            request = request._earlier
        return [message for part in reversed(parts) for message in part]

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools offered; empty when the caller passed none."""
        return self._tool_specs

    @property
    def system_prompt(self) -> str | None:
        """The system prompt as a string, if given."""
        return self._system_prompt

    @property
    def system_prompt_content(self) -> list[SystemContentBlock] | None:
        """The system prompt as content blocks, if given."""
        return self._system_prompt_content

    @property
    def tool_choice(self) -> ToolChoice | None:
        """How the model was told to select tools, if given."""
        return self._tool_choice

    @property
    def output_schema(self) -> OutputSchema[Any] | None:
        """The structured output asked for natively, if any."""
        return self._output_schema

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelRequest):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"ModelRequest(messages={self.messages!r}, tool_specs={self.tool_specs!r}, "
            f"system_prompt={self.system_prompt!r}, "
            f"system_prompt_content={self.system_prompt_content!r}, "
            f"tool_choice={self.tool_choice!r}"
            + ("" if self.output_schema is None else f", output_schema={self.output_schema!r}")
            + ")"
        )

    def _fields(self) -> tuple[object, ...]:
        return (
            self.messages,
            self.tool_specs,
            self.system_prompt,
            self.system_prompt_content,
            self.tool_choice,
            self.output_schema,
        )


Respond: TypeAlias = Callable[[ModelRequest], ScriptedTurn | str]
"""A turn decided when it is requested, from what the model is asked."""

ScriptEntry: TypeAlias = ScriptedTurn | str | BaseException | Respond
"""One entry of a script: a turn, its text, an exception to raise, or a responder."""


class ScriptExhaustedError(RuntimeError):
    """The scripted model was called more times than its script has turns."""


@final
class ScriptedModel:
    """A model that answers each ``stream`` call with the next entry of a script.

    Script entries:

    - ``ScriptedTurn``: played as described there.
    - ``str``: a text-only turn.
    - an exception instance: raised from the stream before any event.
    - a callable (``Respond``): called with the ``ModelRequest`` when the turn
      is played; it returns a turn or a string, or raises to fail the call.

    The request is recorded and the entry consumed when ``stream`` is called; the entry
    is played (and any error raised) while the stream is iterated, as with a real
    model. A call after the last entry raises ``ScriptExhaustedError`` from the
    stream.

    Args:
        turns: The script, in call order.
        model_id: Identifies the model, for logs and tests.
        chunk_size: Characters per text, reasoning and tool-input delta.
        chunk_delay: Seconds slept between events; 0 only yields to the event loop
            once per event, so a test can still cancel the stream.
        context_window: Play a model with this many tokens of context: a request whose
            estimate (``stageware.estimate_tokens`` over its messages, system prompt and
            tool specs) is larger raises ``ContextWindowOverflowError`` from the stream
            before any event, as a provider answers an over-long request, and consumes
            no script entry. ``None`` (the default) accepts any length.
        structured_output: Play a model with a native structured-output mode: a
            structured run then passes ``output_schema=`` (recorded in
            ``ModelRequest.output_schema``) and reads the JSON object from the scripted
            reply's text. Off, a structured run offers the output tool instead, which a
            script calls with ``ScriptedToolCall(<type name>, {...})``.
    """

    def __init__(
        self,
        turns: Iterable[ScriptEntry],
        *,
        model_id: str = "scripted",
        chunk_size: int = 16,
        chunk_delay: float = 0.0,
        context_window: int | None = None,
        structured_output: bool = False,
    ) -> None:
        if context_window is not None and context_window < 1:
            raise ValueError(f"context_window must be at least 1, got {context_window}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        if chunk_delay < 0:
            raise ValueError(f"chunk_delay must not be negative, got {chunk_delay}")
        script = list(turns)
        for entry in script:
            _check_entry(entry)
        self.model_id = model_id
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay
        self.context_window = context_window
        """Tokens of context the model accepts (``None``: any number)."""
        self.supports_structured_output: bool = structured_output
        """Whether a structured run asks this model natively (``output_schema=``)."""
        #: Every request, in call order.
        self.requests: list[ModelRequest] = []
        # The copies of the messages of the last call, which the next call's may share,
        # and the characters of the first i of them at [i], for the default token counts.
        self._sent: Messages = []
        self._characters: list[int] = [0]
        self._script_length = len(script)
        self._turns: deque[ScriptEntry] = deque(script)
        self._counted = RunningCharacters()

    @property
    def remaining(self) -> int:
        """How many script entries have not been used yet."""
        return len(self._turns)

    def __repr__(self) -> str:
        return (
            f"ScriptedModel(model_id={self.model_id!r}, calls={len(self.requests)}, "
            f"remaining={self.remaining})"
        )

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        """Record the request, take the next script entry and stream it.

        ``output_schema=`` is recorded; other extra keyword arguments (``model_state`` and
        the like) are accepted and ignored.
        """
        output_schema = kwargs.get("output_schema")
        earlier = self.requests[-1] if self.requests else None
        earlier_specs = None if earlier is None else earlier.tool_specs
        earlier_prompt = None if earlier is None else earlier.system_prompt_content
        # A deep copy of the whole conversation per call would cost time and memory in
        # proportion to its length, and a long conversation makes many calls: only the
        # messages that differ from the last call's are copied. Equal is enough to share a
        # copy, since a copy only ever stands for what was equal to it when it was taken.
        kept = common_prefix(self._sent, messages)
        added = copy.deepcopy(messages[kept:])
        sent = [*self._sent[:kept], *added]
        characters = self._characters[: kept + 1]
        for message in added:
            characters.append(characters[-1] + message_characters(message))
        self._sent = sent
        self._characters = characters
        # The one caller of the private constructor: only the model builds shared requests.
        request = ModelRequest._after(  # pyright: ignore[reportPrivateUsage]
            earlier,
            kept,
            added,
            tool_specs=_copy_unless_equal(
                tool_specs if tool_specs is not None else [], earlier_specs
            ),
            system_prompt=system_prompt,
            system_prompt_content=_copy_unless_equal(system_prompt_content, earlier_prompt),
            tool_choice=copy.deepcopy(tool_choice),
            output_schema=output_schema,
        )
        call_number = len(self.requests)
        self.requests.append(request)
        if self.context_window is not None:
            tokens = tokens_for_characters(
                characters[-1]
                + request_characters(
                    system_prompt=system_prompt_content or system_prompt, tool_specs=tool_specs
                )
            )
            if tokens > self.context_window:
                return _overflow(self.model_id, tokens, self.context_window)
        entry = self._turns.popleft() if self._turns else None
        return self._play(entry, request, sent, characters[-1], call_number)

    async def count_tokens(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        system_prompt_content: list[SystemContentBlock] | None = None,
    ) -> int:
        """The request's tokens by the rule ``context_window`` checks: ``estimate_tokens``.

        Exact for this model, and cheap: the messages of the last count are kept (as
        references), so a conversation that grew by a turn costs that turn. Neither
        consumes a script entry nor is recorded in ``requests``.
        """
        characters = self._counted.count(messages)
        characters += request_characters(
            system_prompt=system_prompt_content or system_prompt, tool_specs=tool_specs
        )
        return tokens_for_characters(characters)

    async def _play(
        self,
        entry: ScriptEntry | None,
        request: ModelRequest,
        sent: Messages,
        characters: int,
        call_number: int,
    ) -> AsyncIterator[StreamEvent]:
        # *sent* is the request's messages and *characters* their count of characters,
        # passed so that playing the turn neither makes the request hold a list of its own
        # nor counts the whole conversation again.
        if entry is None:
            raise ScriptExhaustedError(
                f"ScriptedModel {self.model_id!r} got call #{call_number + 1} but its script "
                f"had {self._script_length} turn(s), all used; last user message: "
                f"{_quote_last_user_message(sent)}"
            )
        turn = _resolve(entry, request)
        events = _turn_events(turn, request, characters, call_number, self.chunk_size)
        for position, event in enumerate(events):
            if turn.error is not None and position == turn.error_after_chunks:
                raise turn.error
            if self.chunk_delay > 0 and position > 0:
                await anyio.sleep(self.chunk_delay)
            else:
                # Even an instant stream yields once per event: it stays cancellable and
                # lets other tasks run, like a real network stream.
                await anyio.lowlevel.checkpoint()
            yield event
        if turn.error is not None:
            raise turn.error


async def _overflow(model_id: str, tokens: int, window: int) -> AsyncIterator[StreamEvent]:
    # Raised while the stream is read, as a provider's error arrives.
    raise ContextWindowOverflowError(
        f"ScriptedModel {model_id!r}: the request is about {tokens} tokens, over the "
        f"context window of {window}"
    )
    yield  # pragma: no cover  (makes this an async generator)


_T = TypeVar("_T")


def _copy_unless_equal(value: _T, earlier: _T | None) -> _T:
    """*earlier* if it equals *value* (tools and prompt repeat every call), else a copy."""
    return earlier if earlier is not None and earlier == value else copy.deepcopy(value)


def _check_entry(entry: object) -> None:
    if isinstance(entry, ScriptedTurn | str | BaseException):
        return
    is_callable = callable(entry)
    if isinstance(entry, type) and issubclass(entry, BaseException):
        # An exception class is callable, and would otherwise be taken for a responder.
        raise TypeError(
            f"script entry {entry.__name__} is an exception class; pass an instance "
            f"such as {entry.__name__}('...')"
        )
    if not is_callable:
        raise TypeError(
            f"script entries are ScriptedTurn, str, exception instances or callables, got {entry!r}"
        )


def _resolve(entry: ScriptEntry, request: ModelRequest) -> ScriptedTurn:
    """The turn a script entry stands for; raises the entry if it is an exception."""
    if isinstance(entry, ScriptedTurn):
        return entry
    if isinstance(entry, str):
        return ScriptedTurn(text=entry)
    if isinstance(entry, BaseException):
        raise entry
    answer = _call_responder(entry, request)
    if isinstance(answer, ScriptedTurn):
        return answer
    if isinstance(answer, str):
        return ScriptedTurn(text=answer)
    raise TypeError(
        f"scripted responder {entry!r} must return a ScriptedTurn or str, got {answer!r}"
        + ("; raise the exception instead" if isinstance(answer, BaseException) else "")
    )


def _call_responder(respond: Callable[[ModelRequest], object], request: ModelRequest) -> object:
    # Typed as returning object: responders are user code, so their answer is checked.
    return respond(request)


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def _tool_input_json(value: Any) -> str:
    # sort_keys: the same input always streams the same fragments.
    return json.dumps(value, sort_keys=True)


def _turn_events(
    turn: ScriptedTurn, request: ModelRequest, characters: int, call_number: int, chunk_size: int
) -> list[StreamEvent]:
    """The full Converse event sequence for *turn*, in stream order.

    *characters* is the number of characters of text and JSON in the request's messages.
    """
    events: list[StreamEvent] = [StreamEvent(messageStart={"role": "assistant"})]
    index = 0
    produced = 0
    if turn.reasoning:
        for piece in _chunks(turn.reasoning, chunk_size):
            events.append(
                StreamEvent(
                    contentBlockDelta={
                        "delta": {"reasoningContent": {"text": piece}},
                        "contentBlockIndex": index,
                    }
                )
            )
        events.append(StreamEvent(contentBlockStop={"contentBlockIndex": index}))
        produced += len(turn.reasoning)
        index += 1
    if turn.text:
        for piece in _chunks(turn.text, chunk_size):
            events.append(
                StreamEvent(
                    contentBlockDelta={"delta": {"text": piece}, "contentBlockIndex": index}
                )
            )
        events.append(StreamEvent(contentBlockStop={"contentBlockIndex": index}))
        produced += len(turn.text)
        index += 1
    for position, call in enumerate(turn.tool_calls):
        tool_use_id = call.id if call.id is not None else f"tooluse_{call_number}_{position}"
        events.append(
            StreamEvent(
                contentBlockStart={
                    "start": {"toolUse": {"toolUseId": tool_use_id, "name": call.name}},
                    "contentBlockIndex": index,
                }
            )
        )
        encoded = _tool_input_json(call.input)
        for piece in _chunks(encoded, chunk_size):
            events.append(
                StreamEvent(
                    contentBlockDelta={
                        "delta": {"toolUse": {"input": piece}},
                        "contentBlockIndex": index,
                    }
                )
            )
        events.append(StreamEvent(contentBlockStop={"contentBlockIndex": index}))
        produced += len(encoded)
        index += 1
    stop_reason: StopReason = turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")
    events.append(StreamEvent(messageStop={"stopReason": stop_reason}))
    if turn.usage is not None:
        usage = turn.usage.copy()
    else:
        input_tokens = tokens_for_characters(_request_characters(request, characters))
        output_tokens = math.ceil(produced / 4)
        usage = Usage(
            inputTokens=input_tokens,
            outputTokens=output_tokens,
            totalTokens=input_tokens + output_tokens,
        )
    events.append(StreamEvent(metadata={"usage": usage, "metrics": {"latencyMs": 0}}))
    return events


def _request_characters(request: ModelRequest, message_characters: int) -> int:
    """Characters of text and JSON the request sends, for the default input-token count."""
    total = message_characters
    # Hosts may pass the prompt both ways; the blocks are the fuller form, so count only
    # them when present rather than counting the prompt twice.
    if request.system_prompt_content is not None:
        total += sum(len(block.get("text", "")) for block in request.system_prompt_content)
    elif request.system_prompt is not None:
        total += len(request.system_prompt)
    return total


def _message_summary(message: Message) -> str:
    parts: list[str] = []
    for block in message["content"]:
        if "text" in block:
            parts.append(block["text"])
        elif "toolResult" in block:
            result = block["toolResult"]
            shown = " ".join(
                part["text"] if "text" in part else json.dumps(part.get("json"), default=str)
                for part in result["content"]
                if "text" in part or "json" in part
            )
            parts.append(f"[toolResult {result['toolUseId']} {result['status']}] {shown}")
        else:
            parts.append(f"[{next(iter(block), 'empty')} block]")
    return " ".join(parts)


def _quote_last_user_message(messages: Messages) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            return repr(shorten(_message_summary(message), _QUOTE_LIMIT))
    return "(none)"
