"""Session stores keep a snapshot exactly, refuse what they could not keep, and say why."""

from __future__ import annotations

import datetime
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from stageware._host.sessions._sqlite import SQLiteSessionStore
from stageware._host.sessions._store import (
    SNAPSHOT_VERSION,
    MemorySessionStore,
    SessionError,
    SessionSnapshot,
    SessionStore,
)


def make_snapshot(turn: int = 0) -> SessionSnapshot:
    return {
        "version": SNAPSHOT_VERSION,
        "messages": [
            {"role": "user", "content": [{"text": f"question {turn}"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "let me check"},
                    {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"q": [1, 2.5]}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "success",
                            "content": [{"json": {"when": "2024-01-01", "ok": True}}],
                        }
                    }
                ],
            },
        ],
        "state": {"turn": turn, "nested": {"list": [None, "é", "\ud800"]}},
        "model_state": {"response_id": "r-1"},
        "interrupt_state": {"pending": [{"id": "i1", "name": "approve", "reason": None}]},
    }


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    if request.param == "memory":
        return MemorySessionStore()
    return SQLiteSessionStore(tmp_path / "sessions.db")


def sqlite_file(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


def write_row(path: Path, session_id: str, document: object) -> None:
    """Put *document* in the table directly, as a damaged or hand-edited row would be."""
    with sqlite3.connect(path) as connection:
        connection.execute(
            "INSERT OR REPLACE INTO stageware_sessions VALUES (?, ?, ?)",
            (session_id, document, "2024-01-01T00:00:00Z"),
        )
    connection.close()


# --- The contract, for both stores ---------------------------------------------------------


def test_stores_fit_the_protocol(tmp_path: Path) -> None:
    assert isinstance(MemorySessionStore(), SessionStore)
    assert isinstance(SQLiteSessionStore(sqlite_file(tmp_path)), SessionStore)


def test_round_trip(store: SessionStore) -> None:
    snapshot = make_snapshot()
    store.save("s1", snapshot)

    assert store.load("s1") == snapshot
    assert store.load("s1") == make_snapshot()  # the store did not change the caller's copy


def test_load_of_unknown_session_is_none(store: SessionStore) -> None:
    assert store.load("nobody") is None


def test_save_overwrites(store: SessionStore) -> None:
    store.save("s1", make_snapshot(1))
    store.save("s1", make_snapshot(2))
    store.save("s2", make_snapshot(3))

    assert store.load("s1") == make_snapshot(2)
    assert store.load("s2") == make_snapshot(3)


def test_delete(store: SessionStore) -> None:
    store.save("s1", make_snapshot(1))
    store.save("s2", make_snapshot(2))

    store.delete("s1")
    store.delete("s1")  # deleting again, or an unknown id, is not an error
    store.delete("never")

    assert store.load("s1") is None
    assert store.load("s2") == make_snapshot(2)


def test_keys_the_snapshot_types_do_not_declare_survive(store: SessionStore) -> None:
    # Shape validation must not drop data: a block from a newer payload schema round-trips.
    snapshot = make_snapshot()
    cast(dict[str, Any], snapshot["messages"][0]["content"][0])["citation"] = {"page": 3}
    cast(dict[str, Any], snapshot)["extra"] = [1]
    store.save("s1", snapshot)

    assert store.load("s1") == snapshot


def bad_value_cases() -> Iterator[tuple[str, Callable[[SessionSnapshot], None], str]]:
    def at_when(value: object) -> Callable[[SessionSnapshot], None]:
        def put(snapshot: SessionSnapshot) -> None:
            messages: Any = snapshot["messages"]
            messages[2]["content"][0]["toolResult"]["content"][0]["json"]["when"] = value

        return put

    when = "messages[2].content[0].toolResult.content[0].json.when"
    yield "datetime", at_when(datetime.date(2024, 1, 1)), f"{when} is a date"
    yield "bytes", at_when(b"raw"), f"{when} is a bytes"
    yield "set", at_when({1, 2}), f"{when} is a set"
    yield "tuple", at_when((1, 2)), f"{when} is a tuple"
    yield "object", at_when(object()), f"{when} is an object"
    yield "nan", at_when(float("nan")), f"{when} is nan"
    yield "inf", at_when(float("-inf")), f"{when} is -inf"

    def int_key(snapshot: SessionSnapshot) -> None:
        snapshot["state"]["by id"] = {1: "one"}

    yield "int key", int_key, "state['by id'] has the key 1 (int)"

    def circular(snapshot: SessionSnapshot) -> None:
        snapshot["state"]["self"] = snapshot["state"]

    yield "circular", circular, "state.self refers back to itself"

    def bad_role(snapshot: SessionSnapshot) -> None:
        cast(dict[str, Any], snapshot["messages"][1])["role"] = "bot"

    yield "wrong shape", bad_role, "field messages[1].role: Input should be 'user' or 'assistant'"

    def newer(snapshot: SessionSnapshot) -> None:
        snapshot["version"] = 2

    yield "other version", newer, "snapshot format version 2; this stageware writes version 1"


@pytest.mark.parametrize(
    ("damage", "expected"),
    [pytest.param(damage, expected, id=name) for name, damage, expected in bad_value_cases()],
)
def test_save_refuses_what_it_could_not_load_back(
    store: SessionStore, damage: Callable[[SessionSnapshot], None], expected: str
) -> None:
    store.save("s1", make_snapshot(1))
    bad = make_snapshot(2)
    damage(bad)

    with pytest.raises(SessionError) as caught:
        store.save("s1", bad)

    message = str(caught.value)
    assert "'s1'" in message
    assert expected in message
    assert "nothing was written" in message
    assert store.load("s1") == make_snapshot(1)

    with pytest.raises(SessionError):
        store.save("s2", bad)
    assert store.load("s2") is None


# --- SQLite: persistence, damaged rows, formats ------------------------------------------


def test_sqlite_survives_a_restart(tmp_path: Path) -> None:
    path = sqlite_file(tmp_path)
    SQLiteSessionStore(path).save("s1", make_snapshot(1))

    restarted = SQLiteSessionStore(path)

    assert restarted.load("s1") == make_snapshot(1)
    assert restarted.path == path


def test_sqlite_creates_one_table_in_wal_mode(tmp_path: Path) -> None:
    path = sqlite_file(tmp_path)
    SQLiteSessionStore(path).save("s1", make_snapshot())

    with sqlite3.connect(path) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert [name for (name,) in tables] == ["stageware_sessions"]
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA user_version").fetchone() == (1,)
        (document, updated_at) = connection.execute(
            "SELECT document, updated_at FROM stageware_sessions"
        ).fetchone()
    connection.close()
    assert json.loads(document) == make_snapshot()
    assert isinstance(updated_at, str)


def test_sqlite_relative_path_is_fixed_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = SQLiteSessionStore("sessions.db")
    monkeypatch.chdir(tmp_path.parent)

    store.save("s1", make_snapshot())

    assert (tmp_path / "sessions.db").exists()


@pytest.mark.parametrize("path", ["", ":memory:"])
def test_sqlite_refuses_an_in_memory_database(path: str) -> None:
    with pytest.raises(ValueError, match="MemorySessionStore"):
        SQLiteSessionStore(path)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param("{not json", "is not valid JSON", id="bad json"),
        pytest.param(b"\xff\xfe", "is not valid JSON", id="bad utf-8 blob"),
        # TEXT affinity stores the number as the text "42", which is JSON, but not an object.
        pytest.param(42, "the snapshot is an int, not a JSON object", id="a number"),
        pytest.param("[]", "the snapshot is a list, not a JSON object", id="not an object"),
        pytest.param('{"version": NaN}', "NaN is not a JSON number", id="nan"),
        pytest.param(
            json.dumps({**make_snapshot(), "version": 7}),
            "snapshot format version 7 (written by a newer stageware?); "
            "this stageware reads version 1",
            id="newer version",
        ),
        pytest.param(
            json.dumps({**make_snapshot(), "version": 0}),
            "snapshot format version 0; this stageware reads version 1",
            id="older version",
        ),
        pytest.param(
            json.dumps({**make_snapshot(), "version": "1"}),
            "field version: Input should be a valid integer, got a str",
            id="version as text",
        ),
        pytest.param(
            json.dumps({k: v for k, v in make_snapshot().items() if k != "model_state"}),
            "field model_state: Field required",
            id="missing field",
        ),
        pytest.param(
            json.dumps({**make_snapshot(), "state": []}),
            "field state: Input should be a valid dictionary, got a list",
            id="wrong type",
        ),
        pytest.param(
            json.dumps(
                {
                    **make_snapshot(),
                    "messages": [
                        {"role": "user", "content": [{"text": "a"}]},
                        {"role": "user", "content": [{"toolUse": {"toolUseId": "t"}}]},
                    ],
                }
            ),
            "field messages[1].content[0].toolUse.name: Field required (and 1 more)",
            id="deep field",
        ),
    ],
)
def test_sqlite_damaged_row_names_store_session_and_field(
    tmp_path: Path, document: object, expected: str
) -> None:
    path = sqlite_file(tmp_path)
    store = SQLiteSessionStore(path)
    store.save("s1", make_snapshot())
    write_row(path, "s1", document)

    with pytest.raises(SessionError) as caught:
        store.load("s1")

    message = str(caught.value)
    assert f"session 's1' in {path} is damaged" in message
    assert expected in message
    assert "lookup" not in message  # the type of a bad value is named, never its content


def test_sqlite_refuses_a_newer_store_format(tmp_path: Path) -> None:
    path = sqlite_file(tmp_path)
    SQLiteSessionStore(path).save("s1", make_snapshot())
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 2")
    connection.close()

    store = SQLiteSessionStore(path)
    calls: list[Callable[[], object]] = [
        lambda: store.load("s1"),
        lambda: store.save("s1", make_snapshot(2)),
        lambda: store.delete("s1"),
    ]
    for call in calls:
        with pytest.raises(SessionError, match="store format 2, written by a newer stageware"):
            call()

    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 1")
    connection.close()
    assert SQLiteSessionStore(path).load("s1") == make_snapshot()


def test_sqlite_already_open_store_notices_a_newer_format(tmp_path: Path) -> None:
    path = sqlite_file(tmp_path)
    store = SQLiteSessionStore(path)
    store.save("s1", make_snapshot())
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 2")
    connection.close()

    with pytest.raises(SessionError, match=r"store format 2.*Upgrade stageware"):
        store.save("s1", make_snapshot(2))


def test_sqlite_failure_to_open_is_a_session_error(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "missing-dir" / "sessions.db")

    with pytest.raises(SessionError, match=r"cannot load session 's1' in .*missing-dir"):
        store.load("s1")


# --- Threads and processes ----------------------------------------------------------------


def run_threads(count: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait()
            work(index)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_concurrent_saves_last_write_wins_per_session(store: SessionStore) -> None:
    rounds = 10

    def work(index: int) -> None:
        for turn in range(rounds):
            store.save(f"own-{index}", make_snapshot(index * 100 + turn))
            store.save("shared", make_snapshot(index * 100 + turn))
            assert store.load(f"own-{index}") == make_snapshot(index * 100 + turn)

    run_threads(8, work)

    for index in range(8):
        assert store.load(f"own-{index}") == make_snapshot(index * 100 + rounds - 1)
    # Whichever thread wrote "shared" last, the row is one whole snapshot.
    shared = store.load("shared")
    assert shared is not None
    assert shared in [make_snapshot(i * 100 + t) for i in range(8) for t in range(rounds)]


def test_two_sqlite_stores_on_one_file(tmp_path: Path) -> None:
    # Separate store objects stand in for separate processes: separate connections, one file.
    path = sqlite_file(tmp_path)
    stores = [SQLiteSessionStore(path) for _ in range(4)]

    def work(index: int) -> None:
        for turn in range(10):
            stores[index].save(f"s{index}", make_snapshot(turn))
            stores[(index + 1) % 4].load(f"s{index}")

    run_threads(4, work)

    for index in range(4):
        assert stores[0].load(f"s{index}") == make_snapshot(9)


_WRITER = """
import sys
from stageware._host.sessions._sqlite import SQLiteSessionStore

store = SQLiteSessionStore(sys.argv[1])
name = sys.argv[2]
for turn in range(20):
    snapshot = {
        "version": 1,
        "messages": [{"role": "user", "content": [{"text": name}]}],
        "state": {"turn": turn},
        "model_state": {},
        "interrupt_state": {},
    }
    store.save(name, snapshot)
    store.save("shared", snapshot)
    assert store.load(name) == snapshot
"""


def test_two_processes_share_a_file(tmp_path: Path) -> None:
    # Both start on a file that does not exist yet, so they also race to create it.
    path = sqlite_file(tmp_path)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), f"p{index}"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr

    store = SQLiteSessionStore(path)
    for index in range(2):
        loaded = store.load(f"p{index}")
        assert loaded is not None
        assert loaded["state"] == {"turn": 19}
    shared = store.load("shared")
    assert shared is not None
    assert shared["state"] == {"turn": 19}


# --- MemorySessionStore: no aliasing --------------------------------------------------------


def test_memory_store_does_not_alias_caller_state() -> None:
    store = MemorySessionStore()
    snapshot = make_snapshot()
    store.save("s1", snapshot)

    snapshot["state"]["turn"] = 99
    snapshot["messages"].clear()
    assert store.load("s1") == make_snapshot()

    loaded = store.load("s1")
    assert loaded is not None
    loaded["interrupt_state"]["pending"].append({"id": "i2"})
    loaded["messages"][0]["content"][0]["text"] = "changed"
    assert store.load("s1") == make_snapshot()
    assert store.load("s1") is not store.load("s1")


def test_memory_store_hands_back_plain_json_types() -> None:
    # What a restarted SQLite process would see, so the two stores behave the same.
    class Named(str):
        pass

    store = MemorySessionStore()
    snapshot = make_snapshot()
    snapshot["state"]["name"] = Named("x")
    store.save("s1", snapshot)

    loaded = store.load("s1")
    assert loaded is not None
    assert type(loaded["state"]["name"]) is str
    expected = make_snapshot()
    expected["state"]["name"] = "x"
    assert loaded == expected
