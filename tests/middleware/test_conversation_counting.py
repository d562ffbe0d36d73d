"""The managers count what they are given, reuse a summary only for its own conversation,
and let a budget cut by an overflow grow back.

Review findings 5 and 7 of issue 19: a summary was reused for a different conversation
that shared its first and last covered message; the host's ``projected_input_tokens`` was
trusted after an Input handler had grown the messages, so the model refused the request
and the agent's window stayed halved for good.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stageware import (
    Agent,
    ContextWindowOverflowError,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    Message,
    Messages,
    ScriptedModel,
    estimate_tokens,
)
from stageware._middleware._sliding_window import RELAX_AFTER
from stageware._middleware._window import RunningTokens
from stageware.middleware import SlidingWindow, Summarizing
from tests.host.converse_history import assert_valid_converse
from tests.middleware.conversation_helpers import per_message_tokens, text_of

FILLER = "words that take room in the context window. " * 5  # 225 characters, 57 tokens
RETRIEVED = "retrieved passage " * 160  # 2,880 characters, 720 tokens


def add_retrieved_text(context: InvokeModelContext) -> InvokeModelContext:
    """An Input handler, as retrieval does it: text added to the current turn."""
    messages = list(context.messages)
    last = messages[-1]
    messages[-1] = {**last, "content": [{"text": RETRIEVED}, *last["content"]]}
    return context.replace(messages=messages)


def earlier_turns(count: int, who: str) -> Messages:
    turns: Messages = [
        {"role": "user", "content": [{"text": "Hi, I need help with my account."}]},
        {"role": "assistant", "content": [{"text": "Done."}]},
    ]
    for number in range(count):
        turns.append({"role": "user", "content": [{"text": f"{who} step {number}. {FILLER}"}]})
        turns.append({"role": "assistant", "content": [{"text": "Done."}]})
    return turns


# --- finding 7: the projection was made before the Input handlers ------------------------


@pytest.mark.anyio
async def test_sliding_window_counts_text_an_input_handler_added() -> None:
    model = ScriptedModel(["ok"], context_window=1_000)
    agent = Agent(model, conversation_manager=SlidingWindow(max_tokens=1_000, max_messages=None))
    agent.add_middleware(InvokeModelStage.Input, add_retrieved_text)
    agent.messages = earlier_turns(3, "Ana")

    result = await agent.invoke_async("question")

    assert result.stop_reason == "end_turn"
    # One request, within the budget: the window was cut before the call, not after a refusal.
    assert len(model.requests) == 1
    sent = model.requests[0].messages
    assert estimate_tokens(sent) <= 900
    assert RETRIEVED in text_of(sent[-1])
    assert_valid_converse(sent)


@pytest.mark.anyio
async def test_summarizing_counts_text_an_input_handler_added() -> None:
    summarizer = ScriptedModel(["SUMMARY"], model_id="summarizer")
    model = ScriptedModel(["ok"], context_window=1_000)
    manager = Summarizing(max_tokens=1_000, model=summarizer, preserve_recent_messages=2)
    agent = Agent(model, conversation_manager=manager)
    agent.add_middleware(InvokeModelStage.Input, add_retrieved_text)
    agent.messages = earlier_turns(3, "Ana")

    result = await agent.invoke_async("question")

    assert result.stop_reason == "end_turn"
    assert len(model.requests) == 1  # no refused request first
    assert len(summarizer.requests) == 1
    sent = model.requests[0].messages
    assert text_of(sent[0]).startswith("Summary of the earlier conversation:\nSUMMARY")
    assert estimate_tokens(sent) <= 900


class RefuseOnce:
    """An inner Wrap handler: the model refuses the first request over *limit*, once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.refused = False

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        if not self.refused and estimate_tokens(context.messages) > self.limit:
            self.refused = True
            raise ContextWindowOverflowError("too long, this once")
        async for event in next_fn(context):
            yield event


@pytest.mark.anyio
async def test_a_budget_cut_by_one_overflow_grows_back() -> None:
    turns = RELAX_AFTER + 30
    model = ScriptedModel([f"Answer {n}." for n in range(turns)])
    agent = Agent(model)
    agent.add_middleware(InvokeModelStage, SlidingWindow(max_tokens=1_400, max_messages=None))

    refuse = RefuseOnce(limit=800)
    agent.add_middleware(InvokeModelStage, refuse)

    sizes: list[int] = []
    refused_at = -1
    for number in range(turns):
        await agent.invoke_async(f"Question {number}: {FILLER}")
        sizes.append(estimate_tokens(model.requests[-1].messages))
        if refuse.refused and refused_at < 0:
            refused_at = number

    assert refused_at > 0
    capped = sizes[refused_at]
    assert capped <= 500  # half of what was refused
    # The next RELAX_AFTER calls keep to that size (a turn is ~60 tokens) ...
    assert max(sizes[refused_at : refused_at + RELAX_AFTER]) <= capped + 70
    # ... then the configured budget (1,260 of 1,400) applies again.
    assert max(sizes[refused_at + RELAX_AFTER + 1 :]) > 1_000
    assert len(model.requests) == turns  # the refusal never reached the model


# --- finding 5: a summary belongs to the messages it condensed ---------------------------


@pytest.mark.anyio
async def test_a_summary_is_not_reused_for_another_conversation_of_the_same_agent() -> None:
    summarizer = ScriptedModel([f"SUMMARY {n}" for n in range(5)], model_id="summarizer")
    model = ScriptedModel(["Done."] * 2)
    manager = Summarizing(max_tokens=1_500, model=summarizer, preserve_recent_messages=2)
    # Both conversations open with the same message, and every answer is "Done.": the
    # first and the last message a summary covers are equal in both.
    agent = Agent(model, messages=earlier_turns(30, "Ana"), conversation_manager=manager)
    await agent.invoke_async("next")
    assert len(summarizer.requests) == 1

    agent.messages = earlier_turns(30, "Bob")
    await agent.invoke_async("next")

    assert len(summarizer.requests) == 2
    assert "Bob step" in text_of(summarizer.requests[1].messages[0])
    assert "Ana" not in str(model.requests[-1].messages)
    assert text_of(model.requests[-1].messages[0]).startswith(
        "Summary of the earlier conversation:\nSUMMARY 1"
    )


# --- the counter ---------------------------------------------------------------------------


def message(text: str) -> Message:
    return {"role": "user", "content": [{"text": text}]}


def test_the_running_count_follows_changes_anywhere_in_the_list() -> None:
    counter = RunningTokens()
    messages = [message("a" * n) for n in (10, 200, 33, 4_000)]
    assert counter.count(messages) == per_message_tokens(messages)
    grown = [*messages, message("b" * 77)]
    assert counter.count(grown) == per_message_tokens(grown)
    assert counter.tokens_from(3) == per_message_tokens(grown[3:])
    # A message in the middle replaced by an equal-length one of other text, then a longer.
    changed = [grown[0], message("c" * 200), message("d" * 9_000), *grown[3:]]
    assert counter.count(changed) == per_message_tokens(changed)
    shorter = changed[:2]
    assert counter.count(shorter) == per_message_tokens(shorter)
    assert counter.count([]) == 0
