"""Durable runs on DBOS: runs per second with 1, 2 and 4 workers, and what a checkpoint costs.

Run with ``.ci/postgres run python -m tests.benchmarks.durable_scaling`` (``--quick`` for
a short run; it needs ``STAGEWARE_TEST_POSTGRES_URL``, the server's user may create
databases). Two measures, each as figures within one run:

**Workers** (``measure_workers``). One PostgreSQL database of the run's own (made, then
dropped) holds DBOS's system tables and the sessions. For each worker count (1, 2 and 4,
in a shuffled order each round), that many worker processes (``_durable_worker``) launch
DBOS and serve one queue, partitioned by session (one run of a session at a time), each at
most ``WORKER_CONCURRENCY`` runs at once, polling every 50 ms. Once every worker is ready,
this process enqueues ``sessions`` runs through a ``DBOSClient``, one per new session (a
prompt, a model turn calling one tool with a 2 KB result, the answer: three checkpointed
steps, a claim and a final save), and waits for every result; the workers are then stopped
and the next count starts. Runs per second is sessions over the time from the first
enqueue to the last result; each count is reported by its median over the rounds and
relative to one worker. Starting and stopping workers is not timed.

**Checkpoints** (``measure_steps``), on SQLite and on PostgreSQL, each in a process of its
own (``_durable_steps``, which says what it times): an invocation as a DBOS workflow
(``DurableAgent.run_async``) against the same agent on the same session store without a
journal (``Agent.invoke_async``), with one tool round and with five; the ratio durable /
plain of each, and the cost of one more step, durable and plain, from the difference
between the two lengths.

``measure_workers()`` and ``measure_steps()`` return the numbers, for a script that puts
them in a table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.benchmarks._durable_steps import ROUNDS_LONG, ROUNDS_SHORT, STEPS
from tests.benchmarks._durable_worker import AGENT_KIND
from tests.host.sessions.stores import fresh_database

POSTGRES_URL_VARIABLE: Final = "STAGEWARE_TEST_POSTGRES_URL"

COUNTS: Final = (1, 2, 4)
"""Worker processes, one configuration each."""

WORKER_CONCURRENCY: Final = 8
"""Runs one worker process takes from the queue at once."""

QUEUE: Final = "bench"

POLLING: Final = 0.05
"""Seconds between a worker's looks at the queue."""

IDLE_SECONDS: Final = 5.0
"""How long the database's idle commit rate is counted."""

_STATISTICS_LAG: Final = 11.0
"""Seconds until every backend has reported its transactions to ``pg_stat_database``
(PostgreSQL 15 flushes a busy backend's counters at most once a second, an idle one's
within ten seconds)."""

ROOT: Final = Path(__file__).resolve().parents[2]

_RUN_SECONDS: Final = 600.0


@dataclass(frozen=True)
class WorkerScaling:
    """Runs per second by worker processes.

    Attributes:
        sessions: Runs enqueued per round.
        rounds: Rounds measured.
        runs_per_second: The median over the rounds, by worker count.
        idle_commits_per_second: Transactions the database committed per second while the
            workers waited on the paused queue (their polling and background work).
        commits_per_run: Transactions committed per run while the runs ran (DBOS and the
            session store together), with the idle rate's share of that time left out.
    """

    sessions: int
    rounds: int
    runs_per_second: dict[int, float]
    idle_commits_per_second: dict[int, float]
    commits_per_run: dict[int, float]

    def speedup(self, count: int) -> float:
        """Runs per second with *count* workers / with one."""
        return self.runs_per_second[count] / self.runs_per_second[1]


@dataclass(frozen=True)
class StepCost:
    """A checkpointed invocation against a plain one, on one backend.

    Attributes:
        backend: ``sqlite`` or ``postgres``.
        seconds: Median seconds per invocation, by configuration (``plain 1``,
            ``durable 1``, ``plain 5``, ``durable 5``: journal or not, tool rounds).
    """

    backend: str
    seconds: dict[str, float]

    def ratio(self, rounds: int) -> float:
        """An invocation of *rounds* tool rounds as a workflow / without a journal."""
        return self.seconds[f"durable {rounds}"] / self.seconds[f"plain {rounds}"]

    def per_step(self, kind: str) -> float:
        """Seconds one more step adds to an invocation, *kind* ``durable`` or ``plain``."""
        longer = self.seconds[f"{kind} {ROUNDS_LONG}"] - self.seconds[f"{kind} {ROUNDS_SHORT}"]
        return longer / (STEPS[ROUNDS_LONG] - STEPS[ROUNDS_SHORT])


# --- Workers ----------------------------------------------------------------------------------


@contextlib.contextmanager
def workers(url: str, app: str, count: int) -> Generator[list[subprocess.Popen[str]]]:
    """*count* worker processes of *app*, each launched and ready; stopped afterwards."""
    started: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.benchmarks._durable_worker", url, app],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        for process in started:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(
                    f"benchmark worker {process.pid} did not start (it said {line!r}; "
                    f"exit status {process.poll()})"
                )
        yield started
    finally:
        for process in started:
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
        for process in started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class _Database:
    """The benchmark's view of its database: what is left on the queue, commits so far."""

    def __init__(self, url: str) -> None:
        import psycopg

        self._connection = psycopg.connect(url, autocommit=True)
        self.own_commits = 0
        """Transactions this view committed itself (each query is one), to subtract."""

    def close(self) -> None:
        self._connection.close()

    def _commits(self) -> int:
        row = self._connection.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        self.own_commits += 1
        assert row is not None
        return int(row[0])

    def commit_count(self) -> tuple[int, float]:
        """Transactions committed in this database so far by others than this view
        (``pg_stat_database``), and when (``time.monotonic()``)."""
        return self._commits() - self.own_commits, time.monotonic()

    def commits_per_second(self, seconds: float) -> float:
        """Transactions others commit in this database per second, counted over *seconds*."""
        before = self.commit_count()
        time.sleep(seconds)
        after = self.commit_count()
        return (after[0] - before[0]) / (after[1] - before[1])

    def unfinished(self, queue: str) -> int:
        """Runs on *queue* not finished yet: waiting on the queue or running."""
        row = self._connection.execute(
            "SELECT count(*) FROM dbos.workflow_status "
            "WHERE queue_name = %s AND status IN ('ENQUEUED', 'PENDING')",
            (queue,),
        ).fetchone()
        self.own_commits += 1
        assert row is not None
        return int(row[0])


@dataclass(frozen=True)
class _Round:
    runs_per_second: float
    idle_commits_per_second: float
    commits_per_run: float


def _one_round(
    url: str, app: str, count: int, names: Sequence[str], *, count_commits: bool
) -> _Round:
    """Enqueue a run per session on the paused queue, let *count* workers take them."""
    from dbos import DBOSClient

    from stageware.dbos import enqueue_with_client

    database = _Database(url)
    idle = commits = math.nan
    with workers(url, app, count):
        client = DBOSClient(system_database_url=url, application_name=app)
        try:
            # Paused (no worker may take a run) until every run is on it.
            queue = client.register_queue(
                QUEUE, worker_concurrency=0, partition_concurrency=1, polling_interval_sec=POLLING
            )
            handles = [
                enqueue_with_client(client, QUEUE, AGENT_KIND, "refund?", session_id=name)
                for name in names
            ]
            if count_commits:
                # What the workers cost the database while the queue is paused: polling,
                # and their other background work.
                time.sleep(_STATISTICS_LAG)
                idle = database.commits_per_second(IDLE_SECONDS)
            base = database.commit_count() if count_commits else (0, 0.0)
            started = time.perf_counter()
            queue.set_worker_concurrency(WORKER_CONCURRENCY)
            while database.unfinished(QUEUE):
                time.sleep(0.02)
            elapsed = time.perf_counter() - started
            queue.set_worker_concurrency(0)
            if count_commits:
                time.sleep(_STATISTICS_LAG)
                now = database.commit_count()
                # Without the polling that went on meanwhile (the idle rate's share).
                commits = (now[0] - base[0] - idle * (now[1] - base[1])) / len(names)
            results = [handle.get_result() for handle in handles]
        finally:
            database.close()
            client.destroy()
    failed = [result for result in results if result.error is not None or result.text != "done"]
    if failed:
        raise RuntimeError(f"{len(failed)} benchmark runs failed, the first: {failed[0]}")
    return _Round(len(names) / elapsed, idle, commits)


def measure_workers(
    url: str, *, sessions: int = 200, rounds: int = 3, count_commits: bool = True
) -> WorkerScaling:
    """Runs per second with each worker count, interleaved over *rounds*; with
    *count_commits*, the database's transactions too (which waits for its statistics)."""
    samples: dict[int, list[_Round]] = {count: [] for count in COUNTS}
    order = list(COUNTS)
    shuffle = random.Random(31)
    with fresh_database(url) as database:
        app = f"durable_scaling_{uuid.uuid4().hex[:8]}"
        with workers(database, app, 1):
            pass  # DBOS makes its tables once, before workers start side by side
        for round_ in range(rounds):
            shuffle.shuffle(order)
            for count in order:
                names = [f"r{round_}-w{count}-s{n}" for n in range(sessions)]
                measured = _one_round(database, app, count, names, count_commits=count_commits)
                samples[count].append(measured)
                print(f"round {round_ + 1}, {count} workers: {measured}", file=sys.stderr)

    def medians(figure: Callable[[_Round], float]) -> dict[int, float]:
        return {count: statistics.median(map(figure, found)) for count, found in samples.items()}

    return WorkerScaling(
        sessions,
        rounds,
        medians(lambda found: found.runs_per_second),
        medians(lambda found: found.idle_commits_per_second),
        medians(lambda found: found.commits_per_run),
    )


# --- Checkpoints ------------------------------------------------------------------------------


def _steps_process(backend: str, dbos_url: str, store: str, rounds: int) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.benchmarks._durable_steps",
            backend,
            dbos_url,
            store,
            str(rounds),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_RUN_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {backend} checkpoint benchmark failed:\n{done.stderr}")
    seconds: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds


def measure_steps(url: str | None, *, rounds: int = 30) -> list[StepCost]:
    """A checkpointed invocation against a plain one on SQLite, and on PostgreSQL with *url*."""
    costs: list[StepCost] = []
    with tempfile.TemporaryDirectory() as directory:
        system = f"sqlite:///{Path(directory) / 'dbos.sqlite'}"
        store = str(Path(directory) / "sessions.db")
        costs.append(StepCost("sqlite", _steps_process("sqlite", system, store, rounds)))
    if url:
        with fresh_database(url) as database:
            costs.append(
                StepCost("postgres", _steps_process("postgres", database, database, rounds))
            )
    return costs


# --- Report -----------------------------------------------------------------------------------


def print_report(scaling: WorkerScaling | None, costs: list[StepCost]) -> None:
    if scaling is not None:
        print(
            f"runs per second on one PostgreSQL, {scaling.sessions} runs per round "
            f"(each a new session: a prompt, one tool call, the answer), medians of "
            f"{scaling.rounds} interleaved rounds"
        )
        print(
            f"{'workers':>7} {'runs/s':>8} {'vs 1':>6} {'commits/run':>12} {'idle commits/s':>15}"
        )
        for count, rate in scaling.runs_per_second.items():
            print(
                f"{count:>7} {rate:>8.1f} {scaling.speedup(count):>6.2f} "
                f"{scaling.commits_per_run[count]:>12.1f} "
                f"{scaling.idle_commits_per_second[count]:>15.1f}"
            )
    else:
        print(f"workers: skipped; set {POSTGRES_URL_VARIABLE} to measure them")
    print()
    print(
        "an invocation as a DBOS workflow (each model and tool call a checkpointed step) "
        "against the same agent and store without a journal, medians"
    )
    print(
        f"{'backend':<9} {'tool rounds':>11} {'steps':>6} {'plain ms':>9} {'durable ms':>11} "
        f"{'ratio':>6}"
    )
    for cost in costs:
        for rounds in (ROUNDS_SHORT, ROUNDS_LONG):
            print(
                f"{cost.backend:<9} {rounds:>11} {STEPS[rounds]:>6} "
                f"{cost.seconds[f'plain {rounds}'] * 1e3:>9.2f} "
                f"{cost.seconds[f'durable {rounds}'] * 1e3:>11.2f} {cost.ratio(rounds):>6.2f}"
            )
    for cost in costs:
        print(
            f"{cost.backend}: one more step costs {cost.per_step('durable') * 1e3:.2f} ms "
            f"checkpointed, {cost.per_step('plain') * 1e3:.2f} ms plain"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and rounds")
    args = parser.parse_args()
    url = os.environ.get(POSTGRES_URL_VARIABLE) or None
    scaling = None
    if url:
        scaling = measure_workers(
            url, sessions=40 if args.quick else 200, rounds=1 if args.quick else 3
        )
    print_report(scaling, measure_steps(url, rounds=5 if args.quick else 30))


if __name__ == "__main__":
    main()
