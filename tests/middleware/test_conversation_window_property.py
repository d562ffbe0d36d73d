"""The conversation managers send valid conversations: hypothesis over random histories.

For every drawn history and settings, what ``SlidingWindow`` sends is a suffix of the
history that a Converse-style provider accepts, holds the current turn, and fits the
budget whenever the current turn alone does; and the whole history goes when it fits.
``Summarizing`` sends a summary merged into the first kept user message, then a suffix of
the history, valid by the same rules.
"""

from __future__ import annotations

from typing import Literal

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stageware import Agent, Messages, ScriptedModel
from stageware.middleware import SlidingWindow, Summarizing
from tests.host.converse_history import assert_valid_converse
from tests.middleware.conversation_helpers import (
    context_for,
    current_turn_start,
    histories,
    per_message_tokens,
    request_tokens,
    text_of,
)

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SYSTEM = st.one_of(st.none(), st.text(alphabet="abc ", max_size=200))


def _check_suffix(sent: Messages, history: Messages) -> None:
    assert sent == history[len(history) - len(sent) :]
    assert_valid_converse(sent)
    assert len(sent) >= len(history) - current_turn_start(history), "the current turn was cut"


@_SETTINGS
@given(
    history=histories(),
    max_tokens=st.integers(50, 6_000),
    max_messages=st.one_of(st.none(), st.integers(1, 30)),
    trim_to=st.sampled_from([0.5, 0.75, 1.0]),
    system_prompt=_SYSTEM,
)
def test_the_sliding_window_is_a_valid_suffix_within_the_budget(
    history: Messages,
    max_tokens: int,
    max_messages: int | None,
    trim_to: float,
    system_prompt: str | None,
) -> None:
    manager = SlidingWindow(
        max_tokens=max_tokens,
        max_messages=max_messages,
        trim_to=trim_to,
        truncate_tool_results=False,
    )
    context = context_for(history, system_prompt=system_prompt)
    usable = int(max_tokens * 0.9)
    fixed = request_tokens(context_for([], system_prompt=system_prompt))

    sent = manager.window(context).messages

    _check_suffix(sent, history)
    turn = history[current_turn_start(history) :]
    count_fits = max_messages is None or len(turn) <= max_messages
    if per_message_tokens(turn) + fixed <= usable and count_fits:
        assert request_tokens(context_for(sent, system_prompt=system_prompt)) <= usable
        assert max_messages is None or len(sent) <= max_messages
    whole_fits = max_messages is None or len(history) <= max_messages
    if per_message_tokens(history) + fixed <= usable and whole_fits:
        assert sent is history


@_SETTINGS
@given(history=histories(), max_tokens=st.integers(50, 3_000), cut=st.integers(0, 40))
def test_a_window_that_stays_put_stays_valid_as_the_history_grows(
    history: Messages, max_tokens: int, cut: int
) -> None:
    # The manager remembers where the last window started; the next call must still be
    # a valid suffix within the budget, whether it keeps that start or moves on.
    ends = [
        index + 1
        for index, message in enumerate(history)
        if message["role"] == "user" and index + 1 < len(history)
    ]
    earlier = history[: ends[cut % len(ends)]] if ends else history
    manager = SlidingWindow(max_tokens=max_tokens, max_messages=None, truncate_tool_results=False)
    agent = Agent(ScriptedModel([]))
    manager.window(context_for(earlier, agent=agent))

    sent = manager.window(context_for(history, agent=agent)).messages

    _check_suffix(sent, history)
    turn = history[current_turn_start(history) :]
    if per_message_tokens(turn) <= int(max_tokens * 0.9):
        assert per_message_tokens(sent) <= int(max_tokens * 0.9)


@_SETTINGS
@given(history=histories(), max_tokens=st.integers(50, 3_000))
def test_truncated_tool_results_keep_the_window_valid(history: Messages, max_tokens: int) -> None:
    context = context_for(history)

    sent = SlidingWindow(max_tokens=max_tokens, max_messages=None).window(context).messages

    assert_valid_converse(sent)
    suffix = history[len(history) - len(sent) :]
    assert [m["role"] for m in sent] == [m["role"] for m in suffix]
    assert per_message_tokens(sent) <= per_message_tokens(suffix)
    assert len(sent) >= len(history) - current_turn_start(history)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@_SETTINGS
@given(history=histories(), max_tokens=st.integers(200, 4_000))
def test_summarizing_sends_the_summary_then_a_valid_suffix(
    backend: Literal["asyncio", "trio"], history: Messages, max_tokens: int
) -> None:
    summarizer = ScriptedModel(["SUMMARY"] * 2, model_id="summarizer")
    manager = Summarizing(max_tokens=max_tokens, model=summarizer, preserve_recent_messages=2)
    context = context_for(history)

    async def request() -> Messages:
        prepared = await manager._request(context)  # pyright: ignore[reportPrivateUsage]
        return prepared.messages

    sent = anyio.run(request, backend=backend)

    assert_valid_converse(sent)
    assert len(summarizer.requests) <= 1
    if per_message_tokens(history) <= int(max_tokens * 0.9):
        assert sent is history
    kept = sent[1:]
    assert kept == history[len(history) - len(kept) :]
    if summarizer.requests and "SUMMARY" in text_of(sent[0]):
        first_kept = history[len(history) - len(sent)]
        assert sent[0]["content"][1:] == first_kept["content"]
    assert len(sent) >= len(history) - current_turn_start(history)
