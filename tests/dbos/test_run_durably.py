"""run_durably: a live Agent's invocations as DBOS workflows, on an SQLite system database.

The host's agent tests run in this mode too (tests/host/conftest.py, ``dbos``); these
tests check what only DBOS can tell: that each invocation is a workflow of its own whose
model and tool calls are its recorded steps, that events reach the reader while the
workflow runs, and what happens to a workflow whose agent is gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from stageware import (
    Agent,
    ModelError,
    ModelMessageEvent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)

dbos_module = pytest.importorskip("dbos")
stageware_dbos = pytest.importorskip("stageware.dbos")

DBOS = dbos_module.DBOS

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(f"add({a}, {b})")
    return a + b


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    path: Path = tmp_path_factory.mktemp("dbos") / "system.sqlite"
    stageware_dbos.launch(
        name="run-durably-tests", database_url=f"sqlite:///{path}", config={"log_level": "ERROR"}
    )
    yield
    stageware_dbos.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS runs workflows on asyncio only


async def _workflows() -> list[Any]:
    return [
        status
        for status in await DBOS.list_workflows_async(load_input=False)
        if status.workflow_id.startswith("stageware:run_durably:")
    ]


async def test_a_run_before_launch_names_launch() -> None:
    # First in the module: DBOS is not launched yet (the module's fixture launches it).
    agent = stageware_dbos.run_durably(Agent(ScriptedModel(["hello"])))
    with pytest.raises(RuntimeError, match=r"call stageware\.dbos\.launch\(") as caught:
        await agent.invoke_async("hi")
    assert "run_durably(" in str(caught.value)


async def test_an_invocation_is_a_workflow_whose_calls_are_its_steps(launched: None) -> None:
    before = {status.workflow_id for status in await _workflows()}
    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3}, id="t1")]),
            ScriptedTurn(text="It is 5."),
        ]
    )
    agent = stageware_dbos.run_durably(Agent(model, tools=[add], agent_id="adder"))
    ran.clear()

    result = await agent.invoke_async("What is 2 + 3?")

    assert result.text == "It is 5."
    assert ran == ["add(2, 3)"]
    [workflow] = [status for status in await _workflows() if status.workflow_id not in before]
    assert workflow.workflow_id.startswith("stageware:run_durably:adder:")
    assert workflow.status == "SUCCESS"
    steps = await DBOS.list_workflow_steps_async(workflow.workflow_id)
    names = [step["function_name"] for step in steps]
    assert names == ["model:scripted", "tool:add", "model:scripted"]


async def test_stream_async_hands_events_over_while_the_workflow_runs(launched: None) -> None:
    seen_first = anyio.Event()

    @tool
    async def wait_for_reader() -> str:
        """Return once the reader has seen the first model turn's events."""
        # Without live streaming the reader would see nothing before the run ends, and
        # this tool would wait forever (bounded by the test's timeout).
        with anyio.fail_after(10):
            await seen_first.wait()
        return "seen"

    model = ScriptedModel(
        [
            ScriptedTurn(text="One moment.", tool_calls=[ScriptedToolCall("wait_for_reader", {})]),
            ScriptedTurn(text="Done."),
        ]
    )
    agent = stageware_dbos.run_durably(Agent(model, tools=[wait_for_reader]))
    seen: list[str] = []
    events: AsyncIterator[Any] = agent.stream_async("Go")
    async for event in events:
        seen.append(type(event).__name__)
        if isinstance(event, ModelMessageEvent):
            seen_first.set()
    assert seen[-3:] == ["ModelMessageEvent", "EventLoopStopEvent", "AgentResultEvent"]
    assert agent.messages[-1]["content"] == [{"text": "Done."}]


async def test_a_workflow_whose_agent_is_gone_fails_naming_durable_agent(launched: None) -> None:
    # What a workflow that DBOS recovers after a restart finds: no live agent for it in
    # this process (the map of bodies is empty for an invocation this process did not start).
    from stageware._dbos._durably import _invocation  # pyright: ignore[reportPrivateUsage]

    with dbos_module.SetWorkflowID("stageware:run_durably:gone:1"):
        handle = await DBOS.start_workflow_async(_invocation, "an-invocation-nobody-started")
    with pytest.raises(Exception, match="DurableAgent") as raised:
        await handle.get_result()
    assert "run_durably" in str(raised.value)
    assert (await handle.get_status()).status == "ERROR"


async def test_a_run_that_raises_is_a_failed_workflow(launched: None) -> None:
    before = {status.workflow_id for status in await _workflows()}
    model = ScriptedModel([ScriptedTurn(text="x", error=ModelError("the model is down"))])
    agent = stageware_dbos.run_durably(Agent(model, retry_strategy=None))

    with pytest.raises(ModelError, match="the model is down"):
        await agent.invoke_async("Hi")

    [workflow] = [status for status in await _workflows() if status.workflow_id not in before]
    assert workflow.status == "ERROR"
    assert "the invocation raised ModelError: the model is down" in str(workflow.error)


def test_a_trio_agent_is_refused() -> None:
    agent = Agent(ScriptedModel([]), backend="trio")
    with pytest.raises(ValueError, match="asyncio only"):
        stageware_dbos.run_durably(agent)
