"""One process of ``durable_scaling``: a checkpointed invocation against a plain one.

``python -m tests.benchmarks._durable_steps BACKEND DBOS_URL STORE ROUNDS`` launches DBOS
on *DBOS_URL* (an ``sqlite:///`` file or a ``postgresql://`` database; DBOS keeps one
launched instance per process, hence a process per backend), with sessions in *STORE* (an
SQLite file, or the same PostgreSQL database), and times four configurations, interleaved
round by round in a shuffled order, each on a session of its own:

- ``plain, 1 round`` / ``plain, 5 rounds``: ``Agent.invoke_async`` with the session store
  and no journal: every message saved as it enters the history.
- ``durable, 1 round`` / ``durable, 5 rounds``: ``DurableAgent.run_async``: the same
  agent as a DBOS workflow, each model and tool call a checkpointed step (the claim and the
  final save as without DBOS, no per-message saves in between).

A round is a prompt and one tool call with its 2 KB result (3 steps: model, tool, model),
or five of them (11 steps). The difference between the 5-round and the 1-round invocation
of a configuration, over 8, is what one more step costs it; the workflow's start and end
and the claim and final save cancel out. It prints one JSON object: the median wall
seconds of each configuration.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Final

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn
from stageware._host.sessions import SQLiteSessionStore
from stageware.postgres import PostgresSessionStore
from tests.benchmarks._durable_worker import lookup

ROUNDS_SHORT: Final = 1
ROUNDS_LONG: Final = 5
STEPS: Final = {ROUNDS_SHORT: 3, ROUNDS_LONG: 11}
"""Journal steps of an invocation of so many tool rounds: a model call per round, a tool
call per round, and the final model call."""

_WARM_UP: Final = 3


def script(rounds: int) -> ScriptedModel:
    call = ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"query": "q"})])
    return ScriptedModel([call] * rounds + ["done"])


def _store(backend: str, target: str) -> SQLiteSessionStore | PostgresSessionStore:
    if backend == "sqlite":
        return SQLiteSessionStore(target)
    return PostgresSessionStore(target, schema="stageware")


def main() -> None:
    from stageware.dbos import DurableAgent, launch, shutdown

    backend, dbos_url, target, rounds_text = sys.argv[1:5]
    rounds = int(rounds_text)
    store = _store(backend, target)

    def builder(rounds: int) -> Callable[[str], Agent]:
        def build(session_id: str) -> Agent:
            return Agent(script(rounds), tools=[lookup], session_store=store, session_id=session_id)

        return build

    durable = {n: DurableAgent(f"steps{n}", builder(n)) for n in STEPS}
    launch(name="durable_steps", database_url=dbos_url, config={"log_level": "WARNING"})

    def plain_run(n: int) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            return await builder(n)(f"plain-{n}-{uuid.uuid4().hex}").invoke_async("refund?")

        return run

    def durable_run(n: int) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            result = await durable[n].run_async(
                "refund?", session_id=f"durable-{n}-{uuid.uuid4().hex}"
            )
            if result.error is not None or result.text != "done":
                raise SystemExit(f"the durable run failed: {result}")
            return result

        return run

    configurations: dict[str, Callable[[], Awaitable[object]]] = {}
    for n in STEPS:
        configurations[f"plain {n}"] = plain_run(n)
        configurations[f"durable {n}"] = durable_run(n)

    async def measure() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in configurations}
        order = list(configurations)
        shuffle = random.Random(23)
        for round_ in range(_WARM_UP + rounds):
            shuffle.shuffle(order)
            for name in order:
                started = time.perf_counter()
                await configurations[name]()
                if round_ >= _WARM_UP:
                    samples[name].append(time.perf_counter() - started)
        return samples

    samples = asyncio.run(measure())
    shutdown()
    store.close()
    print(json.dumps({name: statistics.median(found) for name, found in samples.items()}))


if __name__ == "__main__":
    main()
