"""Summarizing: an InvokeModel Wrap handler that condenses the oldest turns into a summary.

Like ``SlidingWindow`` it shapes what a call is sent and leaves the agent's history and
session whole. When the request is over budget, it asks a model (its own, or the call's)
to condense the oldest turns into a summary, and sends the summary, as a text block at the
head of the first kept user message, then the kept turns. Merging keeps the request valid
by the host's rules (a user message of its own would make two user turns in a row) and
makes nothing up.

The rules it keeps:

- **Once per stretch.** A summary covers the history's first *n* messages. It is kept per
  agent, in memory, with references to those messages, and reused while the history
  still starts with messages equal to them (one list comparison in C; the host's history
  copies are the same objects from call to call, so it is a pointer check each); a
  conversation that differs anywhere in them is summarised anew. The next summary
  condenses the previous one and the
  turns after it, when the request is over budget again. After a restart (or for a
  history that changed) the first call over budget summarises again, once.
- **The summary call is the model's alone.** It goes to ``model.stream`` directly, with a
  transcript of the turns as one user message, so it passes through no middleware of the
  agent (this one included) and needs no tool specs.
- **A failed summary is not a failed run.** A summary call that raises (a model error, an
  empty answer) is logged at WARNING by ``stageware.middleware`` and the call falls back
  to the sliding window; a summary is asked for again once ``preserve_recent_messages``
  more messages came, not on every call.
- **Counted, not trusted.** Whether a request is over budget is decided by the larger of
  the manager's own count of the messages it is given (``RunningTokens``) and the host's
  projection, which was made before any Input handler changed the messages.
- **Overflow** is retried once with half of what failed, as ``SlidingWindow`` does.
- **The summary is user-role text.** It is sent at the head of the first kept user
  message, so text from the condensed turns, tool results included, reaches the model
  as if the user had written it: condense only conversations whose tool results you
  would let the user say.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import aclosing, suppress
from dataclasses import dataclass, field
from typing import Final, cast, final

from stageware import (
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    Message,
    Messages,
    Model,
)
from stageware.runtime import close_all

from ._budget import (
    check_budget_settings,
    counter_for,
    fixed_tokens,
    no_counters,
    reduce_by_half,
    sent_window,
    usable_tokens,
)
from ._overflow_retry import send_with_one_retry
from ._window import RunningTokens, fit_window, opens_window

__all__ = ["DEFAULT_SUMMARY_PROMPT", "Summarizing"]

_log: Final = logging.getLogger("stageware.middleware")

DEFAULT_SUMMARY_PROMPT: Final = (
    "You condense the earlier part of a conversation between a user and an AI assistant, "
    "so that the assistant can go on without it. Write a summary in the third person, as "
    "bullet points: what the user asked for and decided, what the assistant did and "
    "found (which tools it called, with which results), facts, names, numbers and open "
    "questions that later turns may need. Leave out greetings and repetition. Reply with "
    "the summary only."
)

_SUMMARY_HEADING: Final = "Summary of the earlier conversation:\n"


@final
@dataclass(frozen=True, slots=True)
class _Summary:
    """A summary of a history's first ``len(messages)`` messages."""

    messages: Messages
    text: str

    @property
    def covered(self) -> int:
        """How many messages at the head of the history this summary stands for."""
        return len(self.messages)


def _no_summaries() -> weakref.WeakKeyDictionary[object, _Summary]:
    return weakref.WeakKeyDictionary()


def _no_failures() -> weakref.WeakKeyDictionary[object, int]:
    return weakref.WeakKeyDictionary()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Summarizing:
    """When a call is over budget, condense the oldest turns into a summary and send that.

    Register it on the InvokeModel stage (Wrap), or pass it as
    ``Agent(conversation_manager=...)``:

    ```python
    agent = Agent(model, conversation_manager=Summarizing(max_tokens=32_000))
    ```

    Attributes:
        max_tokens: The request's token budget (messages, system prompt and tool specs),
            by ``stageware.estimate_tokens``.
        model: The model asked for the summary; ``None`` asks the call's own model
            (``context.model``).
        summary_ratio: The share of the budget each summary frees: the kept turns are cut
            to ``1 - summary_ratio`` of it, so the next summary comes after the
            conversation grew by about this share (0.3).
        preserve_recent_messages: At least this many of the newest messages are never
            summarised (10).
        summary_prompt: The system prompt of the summary call.
        reserve: The share of *max_tokens* kept free, for the estimate's error (0.1).

    Raises:
        TypeError: A setting is not of its type.
        ValueError: *max_tokens* or *preserve_recent_messages* is below 1, or a share is
            out of range.
    """

    max_tokens: int
    model: Model | None = None
    summary_ratio: float = 0.3
    preserve_recent_messages: int = 10
    summary_prompt: str = field(default=DEFAULT_SUMMARY_PROMPT, repr=False)
    reserve: float = 0.1
    _summaries: weakref.WeakKeyDictionary[object, _Summary] = field(
        default_factory=_no_summaries, init=False, repr=False, compare=False
    )
    # Per agent, the history length at its last failed summary call.
    _failed_at: weakref.WeakKeyDictionary[object, int] = field(
        default_factory=_no_failures, init=False, repr=False, compare=False
    )
    # Per agent, the estimate of the messages it was given.
    _counted: weakref.WeakKeyDictionary[object, RunningTokens] = field(
        default_factory=no_counters, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if cast(object, self.max_tokens) is None:
            raise TypeError("Summarizing: max_tokens must be an int, got None")
        check_budget_settings(
            "Summarizing",
            max_tokens=self.max_tokens,
            reserve=self.reserve,
            preserve_recent_messages=self.preserve_recent_messages,
        )
        ratio = cast(object, self.summary_ratio)
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool):
            raise TypeError(f"Summarizing: summary_ratio must be a float, got {ratio!r}")
        if not 0.0 < ratio < 1.0:
            raise ValueError(f"Summarizing: summary_ratio must be in (0, 1), got {ratio}")
        if self.model is not None and not isinstance(cast(object, self.model), Model):
            raise TypeError(
                f"Summarizing: model is {self.model!r}, not a Model (an object with a "
                "stream() method)"
            )
        if not isinstance(cast(object, self.summary_prompt), str):
            raise TypeError("Summarizing: summary_prompt must be a str")

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """Send the call with a summary where it is over budget (an InvokeModel Wrap handler)."""
        request = await self._request(context)
        async with aclosing(
            send_with_one_retry("Summarizing", request, next_fn, self._reduce)
        ) as events:
            async for event in events:
                yield event

    async def _request(self, context: InvokeModelContext) -> InvokeModelContext:
        usable = usable_tokens(self.max_tokens, self.reserve)
        messages = context.messages
        summary = self._summary_for(context.agent, messages)
        if summary is None:
            # The projection was made before Input handlers ran: the manager's own count
            # decides, the projection (calibrated to the provider) only corrects upwards.
            own = counter_for(self._counted, context.agent).count(messages)
            projected = context.projected_input_tokens or 0
            if max(projected, own + fixed_tokens(context)) <= usable:
                return context
        request = _with_summary(context, summary)
        if _fits(request, usable):
            return request
        covered = 0 if summary is None else summary.covered
        split = self._split(context.messages, covered, usable - fixed_tokens(context))
        if split is None or self._waits_after_failure(context.agent, len(messages)):
            return sent_window(request, usable, None, truncate=True)
        try:
            text = await self._summarise(context, summary, messages[covered:split])
        except Exception as error:
            # Cancellation is not an Exception on either backend: it passes through.
            _log.warning(
                "Summarizing: the summary call failed (%s: %s); sending a sliding window",
                type(error).__name__,
                error,
            )
            with suppress(TypeError):
                self._failed_at[context.agent] = len(messages)
            return sent_window(request, usable, None, truncate=True)
        summary = _Summary(messages=messages[:split], text=text)
        # An agent handle without weak references: the summary serves this call only.
        with suppress(TypeError):
            self._summaries[context.agent] = summary
        return sent_window(_with_summary(context, summary), usable, None, truncate=True)

    def _waits_after_failure(self, agent: object, length: int) -> bool:
        """Whether a summary failed too recently to ask again.

        After a failure the next request waits until *preserve_recent_messages* more
        messages came, so that a summarizer that is down does not add a failing call to
        every model call.
        """
        try:
            failed_at = self._failed_at.get(agent)
        except TypeError:
            return False
        return failed_at is not None and length < failed_at + self.preserve_recent_messages

    def _summary_for(self, agent: object, messages: Messages) -> _Summary | None:
        try:
            summary = self._summaries.get(agent)
        except TypeError:
            return None
        if summary is None:
            return None
        covered = summary.covered
        if len(messages) > covered and messages[:covered] == summary.messages:
            return summary
        return None

    def _split(self, messages: Messages, covered: int, budget: int) -> int | None:
        """Where the kept turns start after a new summary; ``None`` when none can.

        *budget* is what the request's messages may hold.
        """
        kept_budget = int(max(0, budget) * (1.0 - self.summary_ratio))
        latest = len(messages) - self.preserve_recent_messages
        found = fit_window(messages[covered:], kept_budget)
        split = covered + found.start
        if split > latest:
            split = latest
        while split > covered and not opens_window(messages[split]):
            split -= 1
        return split if split > covered else None

    async def _summarise(
        self, context: InvokeModelContext, earlier: _Summary | None, turns: Messages
    ) -> str:
        model = self.model if self.model is not None else context.model
        transcript = _transcript(earlier, turns, self.max_tokens * 4)
        request: Messages = [{"role": "user", "content": [{"text": transcript}]}]
        parts: list[str] = []
        stream = model.stream(
            request,
            None,
            self.summary_prompt,
            system_prompt_content=[{"text": self.summary_prompt}],
        )
        try:
            async for event in stream:
                delta = event.get("contentBlockDelta")
                if delta is not None and "text" in delta["delta"]:
                    parts.append(delta["delta"]["text"])
        finally:
            # Closed here, in this task, not whenever the garbage collector gets to it.
            await close_all([stream])
        text = "".join(parts).strip()
        if not text:
            raise ValueError("the model answered the summary request with no text")
        return text

    def _reduce(self, failed: InvokeModelContext) -> InvokeModelContext | None:
        return reduce_by_half(failed, truncate=True)


def _with_summary(context: InvokeModelContext, summary: _Summary | None) -> InvokeModelContext:
    if summary is None:
        return context
    kept = context.messages[summary.covered :]
    head = kept[0]
    merged: Message = {
        **head,
        "content": [{"text": _SUMMARY_HEADING + summary.text}, *head["content"]],
    }
    return context.replace(messages=[merged, *kept[1:]], projected_input_tokens=None)


def _fits(request: InvokeModelContext, usable: int) -> bool:
    budget = usable - fixed_tokens(request)
    found = fit_window(request.messages, budget)
    return found.start == 0 and found.fits


def _transcript(earlier: _Summary | None, turns: Messages, limit: int) -> str:
    """The turns as text for the summary call, at most *limit* characters (the newest)."""
    lines: list[str] = []
    if earlier is not None:
        lines.append(f"(Summary of what came before:)\n{earlier.text}")
    for message in turns:
        speaker = "User" if message["role"] == "user" else "Assistant"
        for block in message["content"]:
            if "text" in block:
                lines.append(f"{speaker}: {block['text']}")
            elif "toolUse" in block:
                use = block["toolUse"]
                arguments = json.dumps(use["input"], sort_keys=True, default=str)
                lines.append(f"Assistant called the tool {use['name']} with {arguments}")
            elif "toolResult" in block:
                result = block["toolResult"]
                texts = [
                    part["text"] if "text" in part else json.dumps(part.get("json"))
                    for part in result["content"]
                    if "text" in part or "json" in part
                ]
                status = result.get("status", "success")
                lines.append(f"Tool result ({status}): {' '.join(texts)}")
            elif "image" in block or "document" in block:
                lines.append(f"{speaker}: [an image or document]")
    text = "\n".join(lines)
    instruction = "Summarise this conversation:\n\n"
    room = max(0, limit - len(instruction))
    if len(text) > room:
        text = "[earlier turns left out]\n" + text[len(text) - room :]
    return instruction + text
