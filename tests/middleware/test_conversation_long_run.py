"""The issue's "Show it": a 5,000-turn conversation in a 32k-token window runs to the end.

One agent, one ``ScriptedModel(context_window=32_000)`` that raises
``ContextWindowOverflowError`` for any request over its window, and a ``SlidingWindow``
with the same budget. Every 25th turn the model calls a tool first. The run must end each
turn with an answer, the model must never have been sent too much (an overflow would show
as an extra, refused request), and the history must keep all of it.

The suite runs the full 5,000 turns (about 10,400 messages; the window moves on about 250
times), on asyncio only (the managers' other tests run on both backends), in about a minute
on a loaded two-core machine; ``STAGEWARE_CONVERSATION_TURNS`` sets another count. Replies
stream in one chunk (``chunk_size``) so that the test pays for the conversation, not for
50 stream events a reply. The manager's own work per call is what its window holds; what
grows with the conversation is the host's: every model call that an InvokeModel handler
sees compares the handler's copies of the history with the history
(``_host/_history_copies.py``), about 1 to 5 µs a message, so a 10,000-message history
costs 10 to 50 ms per call.
"""

from __future__ import annotations

import os

import pytest

from stageware import (
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    estimate_tokens,
    tool,
)
from stageware.middleware import SlidingWindow
from tests.host.converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio

TURNS = int(os.environ.get("STAGEWARE_CONVERSATION_TURNS", "5000"))
WINDOW = 32_000
# About 190 tokens a message: the window holds about 150 of the 10,000-odd messages.
ANSWER = "Here is what I found about that, in some detail. " * 15
QUESTION = " and please give me some detail about it, with the background" * 12


@tool
def lookup(order: int) -> str:
    """Look up an order.

    Args:
        order: The order number.
    """
    return f"Order {order}: shipped on Monday, tracking number ABC{order}. " * 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_long_conversation_in_a_32k_window_runs_to_the_end() -> None:
    calls = 0
    pending = False

    def respond(request: ModelRequest) -> ScriptedTurn | str:
        # Decided from a count, not from request.messages: assembling every request's
        # messages would cost the test what the manager saves.
        nonlocal calls, pending
        calls += 1
        if pending:
            pending = False
            return f"Order {calls} has shipped. {ANSWER}"
        if calls % 25 == 0:
            pending = True
            return ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"order": calls})])
        return ANSWER

    tool_turns = sum(1 for turn in range(TURNS) if _calls_tool(turn))
    model = ScriptedModel([respond] * (TURNS + tool_turns), context_window=WINDOW, chunk_size=4096)
    agent = Agent(
        model,
        tools=[lookup],
        conversation_manager=SlidingWindow(max_tokens=WINDOW, max_messages=None),
    )

    for turn in range(TURNS):
        result = await agent.invoke_async(f"Question {turn}{QUESTION}")
        assert result.stop_reason == "end_turn"

    # No request was refused: every model call was one the script answered.
    assert len(model.requests) == TURNS + tool_turns == calls
    assert model.remaining == 0
    assert len(agent.messages) == 2 * TURNS + 2 * tool_turns
    for request in model.requests[:: TURNS // 20]:
        assert estimate_tokens(request.messages, tool_specs=request.tool_specs) <= WINDOW
        assert_valid_converse(request.messages)
    last = model.requests[-1].messages
    assert last == agent.messages[-1 - len(last) : -1]
    assert 50 < len(last) < 400
    # The window moved on many times, and stayed put in between (a prefix cache hits).
    starts = {id(request.messages[0]) for request in model.requests[:: max(1, TURNS // 200)]}
    assert len(starts) > 5


def _calls_tool(turn: int) -> bool:
    """Whether turn *turn* (0-based) makes a tool call, by the responder's count."""
    # The responder counts calls, and a tool turn takes two: find the turns by replaying.
    calls = 0
    for current in range(turn + 1):
        calls += 1
        tool_turn = calls % 25 == 0
        if tool_turn:
            calls += 1
        if current == turn:
            return tool_turn
    return False
