"""A ``stream_async`` its reader abandons without closing it is still cleaned up properly.

The documented way to stop reading early is to close the stream (``aclosing``). A reader
that just breaks out of its ``async for`` leaves the stream to the garbage collector,
which closes it in another task. The run's generators hold anyio scopes across their
yields, which must not be left in another task; the run lives in a task of its own, so
the abandoned stream is closed there: the invocation settles, its hooks fire and the
next invocation runs, on asyncio and on trio.
"""

from __future__ import annotations

import gc

import anyio
import pytest

from stageware import (
    AfterInvocationEvent,
    Agent,
    AgentResult,
    ConcurrentInvocationError,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedTurn,
    ToolStreamEvent,
    tool,
)

from .agent_helpers import calls
from .converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio

GUARD = 10.0


@tool
async def ticker() -> object:
    """Report progress a few times."""
    for tick in range(3):
        yield tick
        await anyio.sleep(0.01)


async def abandon_at(agent: Agent, kind: type[object]) -> None:
    """Read the stream until an event of *kind*, then drop it without closing it."""
    async for event in agent.stream_async("start"):
        if isinstance(event, kind):
            break
    gc.collect()


async def next_call(agent: Agent) -> AgentResult:
    """Call the agent once the collector has finished closing the abandoned stream."""
    while True:
        try:
            return await agent.invoke_async("again")
        except ConcurrentInvocationError:
            await anyio.sleep(0.01)


@pytest.mark.parametrize(
    ("script", "kind"),
    [
        (["a long answer in many small chunks", "next answer"], ModelStreamChunkEvent),
        ([calls(("ticker", {}, "t1")), "next answer"], ToolStreamEvent),
    ],
    ids=["mid model stream", "mid tool round"],
)
async def test_an_abandoned_stream_settles_and_the_next_call_runs(
    script: list[ScriptedTurn | str], kind: type[object]
) -> None:
    model = ScriptedModel(script)
    agent = Agent(model, tools=[ticker])
    settled = anyio.Event()
    heard: list[AgentResult | None] = []

    def after(event: AfterInvocationEvent) -> None:
        heard.append(event.result)
        settled.set()

    agent.add_hook(after, AfterInvocationEvent)

    with anyio.fail_after(GUARD):
        await abandon_at(agent, kind)
        await settled.wait()
        result = await next_call(agent)

    assert heard[0] is None  # it ended without a result: its reader left
    assert result.stop_reason == "end_turn"
    assert result.text == "next answer"
    assert_valid_converse(model.requests[-1].messages)
