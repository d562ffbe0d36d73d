"""Sliding window: an InvokeModel Wrap handler that sends the newest turns that fit.

What it changes is what one model call is sent (``context.replace(messages=...)``), never
the agent's history or its session: the whole conversation stays the durable record, and
a later call with a larger budget, another manager or none sends it again. The window is
a suffix of the conversation that the host's rules accept (see ``_window``): it keeps
each ``toolUse`` with its ``toolResult`` and always holds the current turn.

The budget is ``max_tokens`` less its ``reserve`` and less what the system prompt and the
tool specs count. The manager counts the messages it is given itself
(``RunningTokens``: the cost of what changed since the last call), because the host's
``context.projected_input_tokens`` was made for the history before any Input handler
changed it; when the larger of its count and the projection (which carries the
provider's calibration) is within the budget, the call goes as it is. Otherwise the
window is found by a scan from the newest message back (``stageware.estimate_tokens`` per
message), which stops when the budget is spent. An overflow the model reports anyway is
retried once with half of what failed (``_overflow_retry``), and the agent's next
``RELAX_AFTER`` calls keep to that size: the budget was wrong for this model, and paying
a refused call on every call would double the cost of each. After that many calls that
went through, the configured budget applies again, so one refusal (a large retrieved
text, say) does not shrink the agent's window for good.

Per agent (weakly keyed by its handle, so a different agent never shares it) the manager
remembers where its last window started, and extends it by the new messages while it
fits: a call then costs what is new, and the request's start stays the same from call to
call, which providers' prompt caches need. The memory is checked against the history on
each call (the first and last message it covered) and dropped when they differ.
"""

from __future__ import annotations

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
)

from ._budget import (
    check_budget_settings,
    counter_for,
    fixed_tokens,
    no_counters,
    reduce_by_half,
    usable_tokens,
)
from ._overflow_retry import send_with_one_retry
from ._window import UNLIMITED, RunningTokens, fit_window, truncate_tool_results

__all__ = ["RELAX_AFTER", "SlidingWindow"]

RELAX_AFTER: Final = 20
"""Calls that went through after a refused one before the configured budget applies again."""


@final
@dataclass(frozen=True, slots=True)
class _Placed:
    """Where an agent's last window sat: ``messages[start:end]``."""

    start: int
    first: Message
    end: int
    last: Message

    def still_in(self, messages: Messages) -> bool:
        """Whether *messages* still hold this window's messages where they were."""
        return (
            len(messages) >= self.end
            and messages[self.end - 1] == self.last
            and messages[self.start] == self.first
        )


@final
class _Cap:
    """The request size (tokens) that fit after the model refused a larger one."""

    __slots__ = ("calls", "tokens")

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        # Calls that went through under this cap.
        self.calls = 0


def _no_placements() -> weakref.WeakKeyDictionary[object, _Placed]:
    return weakref.WeakKeyDictionary()


def _no_caps() -> weakref.WeakKeyDictionary[object, _Cap]:
    return weakref.WeakKeyDictionary()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SlidingWindow:
    """Send each model call the newest turns of the conversation that fit a budget.

    Register it on the InvokeModel stage (Wrap), or pass it as
    ``Agent(conversation_manager=...)``:

    ```python
    agent = Agent(model, conversation_manager=SlidingWindow(max_tokens=32_000))
    ```

    Attributes:
        max_messages: At most this many messages per call (Strands' ``window_size``);
            ``None`` for no count limit. The current turn is sent whole even when it is
            longer.
        max_tokens: The request's token budget (messages, system prompt and tool specs),
            by ``stageware.estimate_tokens``; ``None`` for no token limit. Set it to the
            model's context window less the answer's room.
        reserve: The share of *max_tokens* kept free, for the estimate's error
            (0.1: 10%).
        trim_to: When the window must move on, it is cut to this share of the limits
            (0.75), and then stays where it starts while the conversation grows into the
            rest. Providers cache a request's prefix; a window that moved on every call
            would miss that cache every time. 1.0 keeps as much as fits, at the price of
            moving on every call once the limit is reached.
        truncate_tool_results: When the current turn alone is over budget, cut its
            largest tool results down (each keeps its start and a note) so the call fits.
            Off, such a call goes as it is, and the model's overflow error ends it.

    Raises:
        TypeError: A setting is not of its type.
        ValueError: A limit is below 1, *reserve* is not in [0, 1) or *trim_to* not in
            (0, 1].
    """

    max_messages: int | None = 40
    max_tokens: int | None = None
    reserve: float = 0.1
    trim_to: float = 0.75
    truncate_tool_results: bool = True
    _placed: weakref.WeakKeyDictionary[object, _Placed] = field(
        default_factory=_no_placements, init=False, repr=False, compare=False
    )
    # Per agent, the request size (tokens) that fit after the model refused a larger one.
    _fitted: weakref.WeakKeyDictionary[object, _Cap] = field(
        default_factory=_no_caps, init=False, repr=False, compare=False
    )
    # Per agent, the estimate of the messages it was given.
    _counted: weakref.WeakKeyDictionary[object, RunningTokens] = field(
        default_factory=no_counters, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        check_budget_settings(
            "SlidingWindow",
            max_tokens=self.max_tokens,
            reserve=self.reserve,
            max_messages=self.max_messages,
        )
        trim_to = cast(object, self.trim_to)
        if not isinstance(trim_to, (int, float)) or isinstance(trim_to, bool):
            raise TypeError(f"SlidingWindow: trim_to must be a float, got {trim_to!r}")
        if not 0.0 < trim_to <= 1.0:
            raise ValueError(f"SlidingWindow: trim_to must be in (0, 1], got {trim_to}")
        if not isinstance(cast(object, self.truncate_tool_results), bool):
            raise TypeError(
                "SlidingWindow: truncate_tool_results must be a bool, got "
                f"{self.truncate_tool_results!r}"
            )

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        """Send the call's window (an InvokeModel Wrap handler); retry once on overflow."""
        request = self.window(context)
        async with aclosing(
            send_with_one_retry("SlidingWindow", request, next_fn, self._reduce)
        ) as events:
            async for event in events:
                yield event
        self._went_through(context.agent)

    def _went_through(self, agent: object) -> None:
        """Count a call that the model took; lift the agent's cap after ``RELAX_AFTER``."""
        try:
            cap = self._fitted.get(agent)
        except TypeError:
            return
        if cap is not None:
            cap.calls += 1
            if cap.calls >= RELAX_AFTER:
                del self._fitted[agent]

    def window(self, context: InvokeModelContext) -> InvokeModelContext:
        """*context* with the messages this manager sends: itself when all of them go."""
        messages = context.messages
        count = len(messages)
        max_messages = self.max_messages
        if self.max_tokens is None:
            if max_messages is None:
                return context
            usable = fixed = 0
            budget = UNLIMITED
        else:
            usable = usable_tokens(self.max_tokens, self.reserve)
            with suppress(TypeError):
                cap = self._fitted.get(context.agent)
                if cap is not None:
                    usable = min(usable, cap.tokens)
            fixed = fixed_tokens(context)
            budget = max(0, usable - fixed)
        counter = counter_for(self._counted, context.agent)
        total = counter.count(messages)
        placed = self._placed_for(context.agent, messages)
        if placed is not None:
            # The window stays where it started while the conversation grows into it.
            tokens = counter.tokens_from(placed.start)
            if tokens <= budget and (max_messages is None or count - placed.start <= max_messages):
                return self._send(context, placed.start, tokens, fixed)
        elif max_messages is None or count <= max_messages:
            # The projection was made before Input handlers ran; it counts only as an
            # upper correction (the provider's calibration), never as the count.
            projected = context.projected_input_tokens or 0
            if budget == UNLIMITED or max(projected, total + fixed) <= usable:
                return self._send(context, 0, total, fixed)
        found = fit_window(
            messages,
            budget if budget == UNLIMITED else int(budget * self.trim_to),
            None if max_messages is None else _share(max_messages, self.trim_to),
        )
        if found.tokens <= budget or not self.truncate_tool_results:
            return self._send(context, found.start, found.tokens, fixed)
        # The current turn alone is over budget: its tool results are cut to fit.
        window = truncate_tool_results(messages[found.start :], found.tokens, budget)
        return context.replace(messages=window, projected_input_tokens=None)

    def _send(
        self, context: InvokeModelContext, start: int, tokens: int, fixed: int
    ) -> InvokeModelContext:
        messages = context.messages
        if messages:
            placed = _Placed(start, messages[start], len(messages), messages[-1])
            with suppress(TypeError):  # a handle without weak references: no memory
                self._placed[context.agent] = placed
        if start == 0:
            return context
        projected = None if self.max_tokens is None else tokens + fixed
        return context.replace(messages=messages[start:], projected_input_tokens=projected)

    def _placed_for(self, agent: object, messages: Messages) -> _Placed | None:
        try:
            placed = self._placed.get(agent)
        except TypeError:
            return None
        return placed if placed is not None and placed.still_in(messages) else None

    def _reduce(self, failed: InvokeModelContext) -> InvokeModelContext | None:
        smaller = reduce_by_half(failed, truncate=self.truncate_tool_results)
        if smaller is not None and smaller.projected_input_tokens is not None:
            # The budget was too large for this model: later calls of this agent keep to
            # the size retried, so that an overflow is paid once, not on every call.
            with suppress(TypeError):
                self._placed.pop(failed.agent, None)
                self._fitted[failed.agent] = _Cap(smaller.projected_input_tokens)
        return smaller


def _share(limit: int, share: float) -> int:
    return max(1, int(limit * share))
