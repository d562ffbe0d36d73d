"""DBOSJournal on real DBOS: results recorded as JSON, handed back on a replay.

A replay here is DBOS's own: ``DBOS.fork_workflow`` starts the workflow again under a new
id with the recorded steps before a given step copied, and the workflow's code runs from
its start, as after a crash; the journal hands back what is recorded.
"""

from __future__ import annotations

import json
from typing import Any, cast

import anyio
from dbos import DBOS, WorkflowHandle
from dbos._error import DBOSUnexpectedStepError

from stageware._host.sessions import SessionTimeoutError
from stageware.dbos import DBOSJournal, ReplayedError

from .kinds import Setup

ran: list[str] = []
# The name the third step gets: a replay that finds another name at a place must fail.
third_step = ["tool:store"]


async def _journaled() -> list[Any]:
    journal = DBOSJournal(f"{DBOS.workflow_id}")
    # Drawn in order before anything runs, as the host draws a round's tool calls.
    model, slow, store, local = (
        journal.reserve(name) for name in ("model:m", "tool:slow", third_step[0], "tool:local")
    )
    results: dict[str, Any] = {}

    async def call_model() -> Any:
        ran.append("model")
        return {"chunks": [1, 2.5, "x", None, {"deep": [True, False]}]}

    async def call_slow() -> Any:
        await anyio.sleep(0.05)  # finishes after the model call, which was drawn after it
        ran.append("slow")
        return "slow result"

    async def record(name: str, place: object, step: Any) -> None:
        results[name] = await journal.run(place, step)

    async with anyio.create_task_group() as group:
        group.start_soon(record, "slow", slow, call_slow)
        group.start_soon(record, "model", model, call_model)

    async def call_store() -> Any:
        ran.append("store")
        raise SessionTimeoutError("the store held the call past its bound", seconds=2.5)

    class Local(Exception):
        """Defined in a function, so not found by its name: replayed as a ReplayedError."""

    async def call_local() -> Any:
        ran.append("local")
        raise Local("defined in a function")

    raised: list[Any] = []
    for place, step in ((store, call_store), (local, call_local)):
        try:
            await journal.run(place, step)
        except Exception as error:
            raised.append([type(error).__name__, str(error), getattr(error, "seconds", None)])
    failure = None if journal.failure is None else type(journal.failure).__name__
    return [results["model"], results["slow"], raised, failure]


journaled = DBOS.workflow(name="stageware-tests.journaled")(_journaled)


def _start() -> WorkflowHandle[list[Any]]:
    # DBOS starts an async workflow from sync code too; its types do not say so.
    return cast("WorkflowHandle[list[Any]]", DBOS.start_workflow(journaled))


def _run_and_replay() -> tuple[list[Any], list[Any]]:
    handle = _start()
    first = handle.get_result()
    steps = DBOS.list_workflow_steps(handle.workflow_id)
    # Every step recorded: the replay runs none of them.
    replay: WorkflowHandle[list[Any]] = DBOS.fork_workflow(handle.workflow_id, len(steps) + 1)
    return first, replay.get_result()


def test_a_replay_hands_back_results_and_raises_the_recorded_exceptions(durable: Setup) -> None:
    ran.clear()
    first, replayed = _run_and_replay()

    assert ran == ["model", "slow", "store", "local"]  # each once: the replay ran nothing
    assert first[3] is replayed[3] is None
    assert (
        replayed[:2]
        == first[:2]
        == [
            {"chunks": [1, 2.5, "x", None, {"deep": [True, False]}]},
            "slow result",
        ]
    )
    store_error = ["SessionTimeoutError", "the store held the call past its bound", 2.5]
    assert first[2] == [store_error, ["Local", "defined in a function", None]]
    # Rebuilt on the replay: the same class, message and attributes; a class that cannot
    # be found by its name comes back as a ReplayedError naming it.
    assert replayed[2][0] == store_error
    assert replayed[2][1][0] == ReplayedError.__name__
    assert replayed[2][1][1].endswith("Local: defined in a function")


def test_what_dbos_records_is_json_text(durable: Setup) -> None:
    handle = _start()
    handle.get_result()
    outputs = {
        step["function_name"]: json.loads(str(step["output"]))
        for step in DBOS.list_workflow_steps(handle.workflow_id)
    }
    assert outputs["tool:slow"] == {"value": "slow result"}
    assert outputs["tool:store"]["raised"]["type"] == (
        "stageware._host.sessions._store:SessionTimeoutError"
    )
    assert outputs["tool:store"]["raised"]["attributes"] == {"seconds": 2.5}


def test_a_replay_that_takes_another_path_fails(durable: Setup) -> None:
    handle = _start()
    handle.get_result()
    third_step[0] = "tool:another"
    try:
        replay: WorkflowHandle[list[Any]] = DBOS.fork_workflow(handle.workflow_id, 5)
        replayed = replay.get_result()
        name, message, _ = replayed[2][0]
        assert name == DBOSUnexpectedStepError.__name__
        # Kept on the journal too: DurableAgent fails the invocation with it even where
        # the host turned it into a tool's error result.
        assert replayed[3] == DBOSUnexpectedStepError.__name__
        assert "tool:another" in message
        assert "tool:store" in message
    finally:
        third_step[0] = "tool:store"


def test_outside_a_workflow_a_step_runs_plainly() -> None:
    journal = DBOSJournal("no workflow")

    async def step() -> str:
        return "plain"

    async def run() -> Any:
        return await journal.run(journal.reserve("tool:t"), step)

    assert anyio.run(run) == "plain"
    assert journal.key == "no workflow"
