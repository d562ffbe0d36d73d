"""What a session store costs an invocation, against the same agent without a store.

Run with ``python -m tests.benchmarks.store_invocation`` (``--quick`` for fewer rounds).
Every configuration is an ``Agent`` on a scripted model whose history starts at
``HISTORY`` messages (the conversation of ``tests.benchmarks._conversation``); each
invocation is one tool round (a prompt, a model turn calling one tool, its 2 KB result, a
final answer), so the history grows by four messages per invocation, alike for every
configuration. The configurations are: no store, ``MemorySessionStore``,
``SQLiteSessionStore`` (a file in a temporary directory) and, when
``STAGEWARE_TEST_POSTGRES_URL`` is set, ``PostgresSessionStore`` (a schema of its own,
dropped afterwards). With a store, every message is saved as it enters the history (the
claim with the prompt, the model turn, the tool result, the answer, the release), under a
lease that the store's renewer keeps.

All agents run in one event loop, as a server runs them (``await agent.invoke_async``).
Rounds are interleaved (one invocation of each configuration per round, in a shuffled
order) so that machine noise hits them alike; the first rounds warm up and are not
counted. Each configuration is reported by its median wall time and its median CPU time
(``time.process_time``, which includes the store's worker threads and the database
library's work in this process, not a PostgreSQL server's), relative to the agent without
a store. An A/A line (a second agent without a store) shows the noise of the run.

``measure()`` returns, for the summary:

- ``sqlite_ratio``: wall time of an invocation with the SQLite store / without a store
  (the issue's target, at most ``TARGET``).
- ``sqlite_cpu_ratio``: the same in CPU time.
- ``memory_ratio``, ``memory_cpu_ratio``: the same for the memory store.
- ``postgres_ratio``, ``postgres_cpu_ratio``: the same for PostgreSQL (only with a URL).
- ``aa_ratio``: the second agent without a store / the first, wall time (noise; ~1.0).
- ``no_store_ms``, ``sqlite_ms``, ``memory_ms``, ``postgres_ms``: median wall
  milliseconds per invocation, for context.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Final

import anyio

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware._host.sessions import MemorySessionStore, SessionStore, SQLiteSessionStore
from tests.benchmarks._conversation import TOOL_RESULT, conversation

HISTORY: Final = 1_000
"""Messages in every agent's history before the first invocation."""

TARGET: Final = 3.0
"""Issue 17: an invocation with the SQLite store / without, at most this (wall time)."""

POSTGRES_URL_VARIABLE: Final = "STAGEWARE_TEST_POSTGRES_URL"

NO_STORE: Final = "no store"
AA: Final = "no store (A/A)"

_WARM_UP: Final = 3


@tool
def lookup(query: str) -> str:
    """Look the query up.

    Args:
        query: What to look up.
    """
    return TOOL_RESULT


def _script(invocations: int) -> ScriptedModel:
    call = ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"query": "q"})])
    return ScriptedModel([call, "done"] * invocations)


def _agent(invocations: int, store: SessionStore | None, session_id: str) -> Agent:
    if store is None:
        return Agent(_script(invocations), tools=[lookup], messages=conversation(HISTORY))
    # A new session: the first invocation (a warm-up round) saves the history.
    return Agent(
        _script(invocations),
        tools=[lookup],
        messages=conversation(HISTORY),
        session_store=store,
        session_id=session_id,
    )


@contextlib.contextmanager
def _postgres_store(url: str) -> Generator[SessionStore]:
    """A store in a schema of its own, dropped afterwards."""
    import psycopg
    from psycopg import sql

    from stageware.postgres import PostgresSessionStore

    schema = f"stageware_bench_{uuid.uuid4().hex[:12]}"
    try:
        with PostgresSessionStore(url, schema=schema) as store:
            yield store
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


async def _run(agents: dict[str, Agent], rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    """(wall seconds, CPU seconds) of each configuration's invocations, interleaved."""
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in agents}
    order = list(agents)
    shuffle = random.Random(17)
    for round_ in range(_WARM_UP + rounds):
        shuffle.shuffle(order)
        for name in order:
            cpu = time.process_time()
            wall = time.perf_counter()
            await agents[name].invoke_async(f"question {round_}")
            wall = time.perf_counter() - wall
            cpu = time.process_time() - cpu
            if round_ >= _WARM_UP:
                samples[name][0].append(wall)
                samples[name][1].append(cpu)
    return samples


def measure(*, quick: bool = False) -> dict[str, float]:
    """Measure every configuration, interleaved; see the module's docstring for the keys."""
    rounds = 10 if quick else 40
    invocations = _WARM_UP + rounds
    postgres_url = os.environ.get(POSTGRES_URL_VARIABLE) or None
    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        stores: dict[str, SessionStore] = {
            "memory": MemorySessionStore(),
            "sqlite": stack.enter_context(SQLiteSessionStore(directory / "sessions.db")),
        }
        if postgres_url:
            stores["postgres"] = stack.enter_context(_postgres_store(postgres_url))
        agents = {NO_STORE: _agent(invocations, None, ""), AA: _agent(invocations, None, "")}
        for name, store in stores.items():
            agents[name] = _agent(invocations, store, f"benchmark-{name}")
        samples = anyio.run(_run, agents, rounds)
    wall = {name: statistics.median(found[0]) for name, found in samples.items()}
    cpu = {name: statistics.median(found[1]) for name, found in samples.items()}
    figures = {
        "aa_ratio": wall[AA] / wall[NO_STORE],
        "no_store_ms": wall[NO_STORE] * 1e3,
    }
    for name in stores:
        figures[f"{name}_ratio"] = wall[name] / wall[NO_STORE]
        figures[f"{name}_cpu_ratio"] = cpu[name] / cpu[NO_STORE]
        figures[f"{name}_ms"] = wall[name] * 1e3
    return figures


def print_report(figures: dict[str, float], *, quick: bool) -> None:
    rounds = 10 if quick else 40
    print(
        f"one invocation (one tool round) onto {HISTORY:,} messages of history, with a "
        f"store / without; medians of {rounds} interleaved rounds"
    )
    print(f"{'configuration':<16} {'wall ratio':>10} {'CPU ratio':>10} {'ms/invocation':>14}")
    print(f"{NO_STORE:<16} {1.0:>10.2f} {1.0:>10.2f} {figures['no_store_ms']:>14.2f}")
    print(f"{AA:<16} {figures['aa_ratio']:>10.2f} {'':>10} {'':>14}")
    for name in ("memory", "sqlite", "postgres"):
        if f"{name}_ratio" in figures:
            print(
                f"{name:<16} {figures[f'{name}_ratio']:>10.2f} "
                f"{figures[f'{name}_cpu_ratio']:>10.2f} {figures[f'{name}_ms']:>14.2f}"
            )
    ratio = figures["sqlite_ratio"]
    print(
        f"sqlite / no store {ratio:.2f}x (target <= {TARGET:g}x: "
        f"{'met' if ratio <= TARGET else 'MISSED'})"
    )
    if "postgres_ratio" not in figures:
        print(f"postgres: skipped; set {POSTGRES_URL_VARIABLE} to measure it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    print_report(measure(quick=args.quick), quick=args.quick)


if __name__ == "__main__":
    main()
