"""What a session save costs as the conversation grows, measured side by side as ratios.

Run with ``python -m tests.benchmarks.session_save``. For each store (memory; SQLite, in a
file in a temporary directory; PostgreSQL when ``STAGEWARE_TEST_POSTGRES_URL`` is set, in
a schema of its own that is dropped afterwards) one session is prepared per history
length, with 10, 100, 1,000 and 5,000 messages already stored. Each timed save brings one
new turn, as an agent's final save does: a user message, an assistant tool call, a tool
result of about 2 KB and an assistant answer, keeping every stored message
(``kept_messages``). An untimed save then cuts the history back, so every round saves onto
the same length. Rounds are interleaved over the lengths (in a shuffled order each round)
so that machine noise hits them alike; each length is reported by its median, relative to
the 10-message session. For reference, each round also times the same save written as the
stores wrote every save before messages were stored append-only: the whole history
rewritten (``kept_messages=0``), on a store of its own (another file, another schema) so
that its large writes do not land in the log the append-only saves commit to. It shows
what the measure looks like when a save grows.

Bytes per save are what the store hands to its database for the timed save: the UTF-8
bytes of every text and bytes parameter of every statement the save executes (SQLite:
``Connection.execute`` and ``executemany``; PostgreSQL: ``Cursor.execute``, an array
parameter counted element by element). SQL text, and the pages, indexes and log records
the database writes around the rows, are left out: they are the database's own overhead.
The memory store has no database, so its bytes are the encoded documents it keeps. Bytes
are reported relative to the new turn itself: its four messages as compact JSON.

A second measure (``measure_invocations()``) compares what one invocation's saves cost
now that every message is saved as it enters the history against the single final save
an invocation made before: the same turn, on a session of ``INVOCATION_LENGTH`` stored
messages, saved as the agent saves it for a run with one tool call (``CHECKPOINTED``:
the claim holding the prompt back, the prompt and the model turn with its round, the
tool's result, the results message with the answer, the release) and as it was
(``FINAL_ONLY``: the claim, then the whole turn with the release). Both run interleaved
on one store, in sessions of their own; each is reported by its median time and bytes
per invocation, side by side, with their ratio.

``measure()`` and ``measure_invocations()`` return the numbers, for a script that puts
them in a table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from unittest import mock

from stageware._host.sessions import (
    SNAPSHOT_VERSION,
    MemorySessionStore,
    SessionSnapshot,
    SessionStore,
    SQLiteSessionStore,
    _memory,
)
from stageware._host.sessions._encoding import EncodedSnapshot, encode_snapshot
from tests.benchmarks._conversation import conversation, turn

LENGTHS: Final = (10, 100, 1_000, 5_000)
"""Messages already stored when a turn is saved."""

POSTGRES_URL_VARIABLE: Final = "STAGEWARE_TEST_POSTGRES_URL"

TIME_TARGET: Final = 2.0
"""Issue 10: save time at 5,000 stored messages / at 10, at most this."""

BYTES_TARGET: Final = 4.0
"""Issue 10: bytes written per save / bytes of the new turn, at most this."""

MODES: Final = ("append", "rewrite")

INVOCATION_LENGTH: Final = 100
"""Messages stored before the invocation whose saves ``measure_invocations`` times."""

CHECKPOINTED: Final = "checkpointed"
FINAL_ONLY: Final = "final only"


@dataclass(frozen=True)
class StoreScaling:
    """How one store's save scales with the history it already holds.

    Attributes:
        store: The store's name (``memory``, ``sqlite``, ``postgres``).
        seconds: Median seconds per save, by messages already stored.
        written: Bytes handed to the database per save, by messages already stored.
        rewrite_seconds: The same for the reference, the whole history rewritten.
        rewrite_written: The same for the reference, the whole history rewritten.
        turn_bytes: Bytes of the new turn, as compact JSON.
    """

    store: str
    seconds: dict[int, float]
    written: dict[int, int]
    rewrite_seconds: dict[int, float]
    rewrite_written: dict[int, int]
    turn_bytes: int

    def time_ratio(self, length: int, *, rewrite: bool = False) -> float:
        """Save time with *length* messages stored, relative to the shortest history."""
        seconds = self.rewrite_seconds if rewrite else self.seconds
        return seconds[length] / seconds[min(seconds)]

    def bytes_ratio(self, length: int, *, rewrite: bool = False) -> float:
        """Bytes written per save with *length* messages stored / bytes of the turn."""
        written = self.rewrite_written if rewrite else self.written
        return written[length] / self.turn_bytes


def snapshot(messages: list[Any]) -> SessionSnapshot:
    return {
        "version": SNAPSHOT_VERSION,
        "messages": messages,
        "state": {"customer": "c-42", "turns": len(messages) // 4},
        "model_state": {},
        "interrupt_state": {
            "activated": False,
            "interrupts": [],
            "pending_tool_execution": None,
            "pending_input": None,
        },
    }


# --- Counting the bytes a save hands to its database ------------------------------------


class _Counter:
    bytes = 0


def _size(value: object) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(_size(item) for item in value)  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return sum(_size(item) for item in value.values())  # pyright: ignore[reportUnknownVariableType]
    return 0


class _CountingConnection(sqlite3.Connection):
    """An SQLite connection that adds up the parameters it is handed."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        _Counter.bytes += _size(parameters)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        rows = list(parameters)
        _Counter.bytes += _size(rows)
        return super().executemany(sql, rows)


@contextlib.contextmanager
def _counting_sqlite() -> Iterator[None]:
    """Every SQLite connection opened inside counts what it is handed, for as long as it
    lives; the timed save starts from a zeroed count."""
    connect = sqlite3.connect

    def counting_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(*args, **kwargs, factory=_CountingConnection)

    with mock.patch.object(sqlite3, "connect", counting_connect):
        yield


@contextlib.contextmanager
def _counting_postgres() -> Iterator[None]:
    import psycopg

    execute = psycopg.Cursor.execute

    def counting_execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        _Counter.bytes += _size(params)
        return execute(self, query, params, **kwargs)

    with mock.patch.object(psycopg.Cursor, "execute", counting_execute):
        yield


@contextlib.contextmanager
def _counting_memory() -> Iterator[None]:
    def counting_encode(*args: Any, **kwargs: Any) -> EncodedSnapshot:
        encoded = encode_snapshot(*args, **kwargs)
        _Counter.bytes += encoded.size
        return encoded

    with mock.patch.object(_memory, "encode_snapshot", counting_encode):
        yield


# --- Measuring ------------------------------------------------------------------------------


def _scaling(
    name: str,
    stores: dict[str, SessionStore],
    counting: Callable[[], contextlib.AbstractContextManager[None]],
    rounds: int,
) -> StoreScaling:
    """Measure the saves of each mode on *stores* (one per mode)."""
    new_turn = turn(10_000)
    versions: dict[tuple[int, str], int] = {}
    for length in LENGTHS:
        for mode in MODES:
            versions[length, mode] = stores[mode].save(
                f"bench-{length}",
                snapshot(conversation(length)),
                expected_version=0,
                owner="bench",
                lease_seconds=None,
            )
    # (kept, snapshot) of each way to save the turn: appended, or the whole history.
    saves = {
        length: {
            "append": (length, snapshot(new_turn)),
            "rewrite": (0, snapshot(conversation(length) + new_turn)),
        }
        for length in LENGTHS
    }
    samples = {mode: {length: list[float]() for length in LENGTHS} for mode in MODES}
    written = {mode: {length: list[int]() for length in LENGTHS} for mode in MODES}
    order = [(length, mode) for length in LENGTHS for mode in MODES]
    shuffle = random.Random(10)
    # The first round warms connections and caches up; it is not counted.
    for round_ in range(rounds + 1):
        shuffle.shuffle(order)
        for length, mode in order:
            session_id = f"bench-{length}"
            store = stores[mode]
            kept, saved = saves[length][mode]
            _Counter.bytes = 0
            with counting():
                start = time.perf_counter()
                version = store.save(
                    session_id,
                    saved,
                    expected_version=versions[length, mode],
                    owner="bench",
                    lease_seconds=None,
                    kept_messages=kept,
                )
                elapsed = time.perf_counter() - start
            if round_:
                samples[mode][length].append(elapsed)
                written[mode][length].append(_Counter.bytes)
            # Back to *length* messages, untimed, for the next save.
            versions[length, mode] = store.save(
                session_id,
                snapshot([]),
                expected_version=version,
                owner="bench",
                lease_seconds=None,
                kept_messages=length,
            )

    def medians(values: dict[int, list[float]]) -> dict[int, float]:
        return {length: statistics.median(found) for length, found in values.items()}

    def sizes(values: dict[int, list[int]]) -> dict[int, int]:
        return {length: round(statistics.median(found)) for length, found in values.items()}

    return StoreScaling(
        store=name,
        seconds=medians(samples["append"]),
        written=sizes(written["append"]),
        rewrite_seconds=medians(samples["rewrite"]),
        rewrite_written=sizes(written["rewrite"]),
        turn_bytes=len(json.dumps(new_turn, separators=(",", ":")).encode()),
    )


# --- One invocation's saves: per-message checkpoints against one final save -------------


@dataclass(frozen=True)
class InvocationCost:
    """What one invocation's saves cost on one store, by way of saving.

    Attributes:
        store: The store's name.
        saves: Saves per invocation, by way of saving.
        seconds: Median seconds per invocation (all its saves), by way of saving.
        written: Median bytes handed to the database per invocation, by way of saving.
    """

    store: str
    saves: dict[str, int]
    seconds: dict[str, float]
    written: dict[str, int]

    def time_ratio(self) -> float:
        return self.seconds[CHECKPOINTED] / self.seconds[FINAL_ONLY]

    def bytes_ratio(self) -> float:
        return self.written[CHECKPOINTED] / self.written[FINAL_ONLY]


# One save of an invocation: (messages kept of the stored history, the snapshot, lease).
_Save = tuple[int, SessionSnapshot, bool]


def _holding(saved: SessionSnapshot, prompt: Any) -> SessionSnapshot:
    """*saved* with *prompt* held back for the pass, as a claim saves it."""
    interrupt_state = {**saved["interrupt_state"], "pending_input": {"messages": [prompt]}}
    return {**saved, "interrupt_state": interrupt_state}


def _with_round(saved: SessionSnapshot, message: Any, completed: dict[str, Any]) -> SessionSnapshot:
    """*saved* with a tool round stored for replay, as the agent stores one."""
    interrupt_state = {
        **saved["interrupt_state"],
        "pending_tool_execution": {"tool_use_message": message, "completed": completed},
    }
    return {**saved, "interrupt_state": interrupt_state}


def invocation_saves(length: int) -> dict[str, list[_Save]]:
    """The saves of one invocation with one tool call, onto *length* stored messages."""
    prompt, call, results, answer = turn(10_000)
    result = results["content"][0]["toolResult"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
    tool_use_id = result["toolUseId"]
    return {
        CHECKPOINTED: [
            (length, _holding(snapshot([]), prompt), True),  # the claim
            (length, _with_round(snapshot([prompt, call]), call, {}), True),
            (length + 2, _with_round(snapshot([]), call, {tool_use_id: result}), True),
            (length + 2, snapshot([results, answer]), True),
            (length + 4, snapshot([]), False),  # the release
        ],
        FINAL_ONLY: [
            (length, snapshot([]), True),
            (length, snapshot([prompt, call, results, answer]), False),
        ],
    }


def _invocation_cost(
    name: str,
    store: SessionStore,
    counting: Callable[[], contextlib.AbstractContextManager[None]],
    rounds: int,
) -> InvocationCost:
    ways = invocation_saves(INVOCATION_LENGTH)
    versions = {
        way: store.save(
            f"invocation-{way}",
            snapshot(conversation(INVOCATION_LENGTH)),
            expected_version=0,
            owner="bench",
            lease_seconds=None,
        )
        for way in ways
    }
    samples: dict[str, list[float]] = {way: [] for way in ways}
    written: dict[str, list[int]] = {way: [] for way in ways}
    order = list(ways)
    shuffle = random.Random(16)
    for round_ in range(rounds + 1):  # the first round warms up; it is not counted
        shuffle.shuffle(order)
        for way in order:
            session_id = f"invocation-{way}"
            version = versions[way]
            _Counter.bytes = 0
            with counting():
                start = time.perf_counter()
                for kept, saved, lease in ways[way]:
                    version = store.save(
                        session_id,
                        saved,
                        expected_version=version,
                        owner="bench",
                        lease_seconds=30.0 if lease else None,
                        kept_messages=kept,
                    )
                elapsed = time.perf_counter() - start
            if round_:
                samples[way].append(elapsed)
                written[way].append(_Counter.bytes)
            versions[way] = store.save(  # back to the stored length, untimed
                session_id,
                snapshot([]),
                expected_version=version,
                owner="bench",
                lease_seconds=None,
                kept_messages=INVOCATION_LENGTH,
            )
    return InvocationCost(
        store=name,
        saves={way: len(saves) for way, saves in ways.items()},
        seconds={way: statistics.median(found) for way, found in samples.items()},
        written={way: round(statistics.median(found)) for way, found in written.items()},
    )


def measure_invocations(rounds: int = 25, postgres_url: str | None = None) -> list[InvocationCost]:
    """Measure one invocation's saves, both ways, on every store; PostgreSQL only with a URL."""
    results = [_invocation_cost("memory", MemorySessionStore(), _counting_memory, rounds)]
    # Counting for the store's whole life: it keeps its connections open between saves.
    with tempfile.TemporaryDirectory() as directory, _counting_sqlite():
        sqlite = SQLiteSessionStore(Path(directory) / "invocations.db")
        results.append(_invocation_cost("sqlite", sqlite, contextlib.nullcontext, rounds))
        sqlite.close()
    if postgres_url:
        with _postgres_stores(postgres_url) as postgres:
            store = postgres["append"]
            results.append(_invocation_cost("postgres", store, _counting_postgres, rounds))
    return results


def print_invocations(results: list[InvocationCost], rounds: int) -> None:
    print(
        f"\none invocation with one tool call, onto {INVOCATION_LENGTH} stored messages: "
        f"every message saved as it enters the history ({CHECKPOINTED}) against one final "
        f"save ({FINAL_ONLY}), medians of {rounds} interleaved rounds"
    )
    print(
        f"{'store':<9} {'saves':>11} {'ms/invocation':>19} {'bytes/invocation':>21} "
        f"{'time ratio':>11} {'bytes ratio':>12}"
    )
    for result in results:
        saves = f"{result.saves[CHECKPOINTED]} vs {result.saves[FINAL_ONLY]}"
        ms = f"{result.seconds[CHECKPOINTED] * 1e3:.3f} vs {result.seconds[FINAL_ONLY] * 1e3:.3f}"
        sizes = f"{result.written[CHECKPOINTED]:,} vs {result.written[FINAL_ONLY]:,}"
        print(
            f"{result.store:<9} {saves:>11} {ms:>19} {sizes:>21} "
            f"{result.time_ratio():>10.2f}x {result.bytes_ratio():>11.2f}x"
        )


@contextlib.contextmanager
def _postgres_stores(url: str) -> Iterator[dict[str, SessionStore]]:
    """A store per mode, each in a new schema, dropped afterwards."""
    import psycopg
    from psycopg import sql

    from stageware.postgres import PostgresSessionStore

    schemas = {mode: f"stageware_bench_{uuid.uuid4().hex[:12]}" for mode in MODES}
    try:
        with contextlib.ExitStack() as stack:
            yield {
                mode: stack.enter_context(PostgresSessionStore(url, schema=schema))
                for mode, schema in schemas.items()
            }
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            for schema in schemas.values():
                connection.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )


def measure(rounds: int = 25, postgres_url: str | None = None) -> list[StoreScaling]:
    """Measure every store; PostgreSQL only with *postgres_url*."""
    memory: dict[str, SessionStore] = {mode: MemorySessionStore() for mode in MODES}
    results = [_scaling("memory", memory, _counting_memory, rounds)]
    # Counting for the stores' whole life: they keep their connections open between saves.
    with tempfile.TemporaryDirectory() as directory, _counting_sqlite():
        sqlite = {mode: SQLiteSessionStore(Path(directory) / f"{mode}.db") for mode in MODES}
        results.append(
            _scaling("sqlite", dict[str, SessionStore](sqlite), contextlib.nullcontext, rounds)
        )
        for store in sqlite.values():
            store.close()
    if postgres_url:
        with _postgres_stores(postgres_url) as postgres:
            results.append(_scaling("postgres", postgres, _counting_postgres, rounds))
    return results


def print_report(results: list[StoreScaling], rounds: int) -> None:
    turn_bytes = results[0].turn_bytes
    print(
        f"session save of one new turn (4 messages, {turn_bytes:,} bytes of JSON), "
        f"medians of {rounds} interleaved rounds"
    )
    print(
        f"{'':<17} {'append-only (kept_messages)':^44}   {'reference: whole history rewritten':^36}"
    )
    print(
        f"{'store':<9} {'stored':>7} {'time ratio':>11} {'ms/save':>8} "
        f"{'bytes/save':>11} {'bytes ratio':>12}   {'time ratio':>11} {'ms/save':>8} "
        f"{'bytes ratio':>12}"
    )
    for result in results:
        for length in LENGTHS:
            print(
                f"{result.store:<9} {length:>7,} {result.time_ratio(length):>11.2f} "
                f"{result.seconds[length] * 1e3:>8.3f} {result.written[length]:>11,} "
                f"{result.bytes_ratio(length):>12.2f}   "
                f"{result.time_ratio(length, rewrite=True):>11.2f} "
                f"{result.rewrite_seconds[length] * 1e3:>8.3f} "
                f"{result.bytes_ratio(length, rewrite=True):>12.2f}"
            )
    longest, shortest = max(LENGTHS), min(LENGTHS)
    for result in results:
        time_ratio = result.time_ratio(longest)
        bytes_ratio = max(result.bytes_ratio(length) for length in LENGTHS)
        print(
            f"{result.store}: time {longest:,} vs {shortest} stored {time_ratio:.2f}x "
            f"(target <= {TIME_TARGET:g}x: {'met' if time_ratio <= TIME_TARGET else 'MISSED'}); "
            f"bytes per save / turn at most {bytes_ratio:.2f}x "
            f"(target <= {BYTES_TARGET:g}x: {'met' if bytes_ratio <= BYTES_TARGET else 'MISSED'})"
        )
    if not any(result.store == "postgres" for result in results):
        print(f"postgres: skipped; set {POSTGRES_URL_VARIABLE} to measure it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    postgres_url = os.environ.get(POSTGRES_URL_VARIABLE) or None
    results = measure(args.rounds, postgres_url)
    print_report(results, args.rounds)
    print_invocations(measure_invocations(args.rounds, postgres_url), args.rounds)


if __name__ == "__main__":
    main()
