"""What only the SQLite store does: its file, its tables, other applications' files, formats."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from stageware._host.sessions import Escalation, SessionError, SQLiteSessionStore, StoredSession

from .approvals import answered, approval_id, asked, utc
from .approvals import save as save_interrupts
from .stores import make_snapshot, run_threads


def sql(path: Path, *statements: str) -> list[tuple[object, ...]]:
    """Run *statements* on the file as another program would; return the last one's rows."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            rows = connection.execute(statement).fetchall()
        return rows
    finally:
        connection.close()


def write(path: Path, statement: str, value: object) -> None:
    """Write *value* into the file directly, as a damaged or hand-edited row would be."""
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(statement, (value,))
    connection.close()


def save(store: SQLiteSessionStore, session_id: str, version: int, turn: int = 0) -> int:
    return store.save(
        session_id, make_snapshot(turn), expected_version=version, owner="w", lease_seconds=None
    )


def every_call(store: SQLiteSessionStore) -> list[Callable[[], object]]:
    return [
        lambda: store.load("s1"),
        lambda: save(store, "s1", 1, 2),
        lambda: store.renew("s1", version=1, owner="w", lease_seconds=1),
        lambda: store.delete("s1"),
        store.session_ids,
        lambda: store.open_escalation("s1"),
        lambda: store.escalations("refunds", status="open"),
        lambda: store.claim_escalation("e1", by="ana"),
        lambda: store.resolve_escalation("e1", by="ana", resolution="done"),
    ]


def escalation(session_id: str = "s1") -> Escalation:
    return Escalation.new(
        session_id,
        queue="refunds",
        hook="tool.before",
        middleware="limit",
        reason="too much",
        event={"amount": 900},
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


# --- The file ------------------------------------------------------------------------------


def test_survives_a_restart(path: Path) -> None:
    save(SQLiteSessionStore(path), "s1", 0, 1)

    restarted = SQLiteSessionStore(path)

    assert restarted.load("s1") == StoredSession(make_snapshot(1), 1, None)
    assert restarted.path == path


def test_a_new_file_gets_the_store_tables_in_wal_mode(path: Path) -> None:
    save(SQLiteSessionStore(path), "s1", 0)

    assert sql(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") == [
        ("stageware_approvals",),
        ("stageware_escalations",),
        ("stageware_messages",),
        ("stageware_sessions",),
        ("stageware_store_format",),
    ]
    assert sql(path, "PRAGMA journal_mode") == [("wal",)]
    assert sql(path, "PRAGMA user_version") == [(0,)]  # the file owner's, left alone
    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    [(version, document, owner, updated_at, count)] = sql(
        path,
        "SELECT version, document, lease_owner, updated_at, message_count FROM stageware_sessions",
    )
    assert (version, owner, count) == (1, None, 3)
    assert isinstance(document, str)
    snapshot: dict[str, object] = dict(make_snapshot())
    messages = make_snapshot()["messages"]
    del snapshot["messages"]
    assert json.loads(document) == snapshot  # the messages are rows of their own
    rows = sql(path, "SELECT session_id, position, document FROM stageware_messages")
    assert [(s, p, json.loads(str(d))) for s, p, d in rows] == [
        ("s1", position, message) for position, message in enumerate(messages)
    ]
    assert isinstance(updated_at, str)


def test_relative_path_is_fixed_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = SQLiteSessionStore("sessions.db")
    monkeypatch.chdir(tmp_path.parent)

    save(store, "s1", 0)

    assert (tmp_path / "sessions.db").exists()


@pytest.mark.parametrize("name", ["", ":memory:"])
def test_refuses_an_in_memory_database(name: str) -> None:
    with pytest.raises(ValueError, match="MemorySessionStore"):
        SQLiteSessionStore(name)


def test_failure_to_open_is_a_session_error(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "missing-dir" / "sessions.db")

    with pytest.raises(SessionError, match=r"cannot load session 's1' in .*missing-dir"):
        store.load("s1")


# --- Another application's file ------------------------------------------------------------


def test_keeps_the_journal_mode_of_a_file_it_did_not_create(path: Path) -> None:
    sql(
        path,
        "PRAGMA journal_mode = DELETE",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)",
        "INSERT INTO orders (item) VALUES ('tea')",
    )

    store = SQLiteSessionStore(path)
    save(store, "s1", 0)
    save(store, "s1", 1, 1)

    assert sql(path, "PRAGMA journal_mode") == [("delete",)]
    assert sql(path, "SELECT id, item FROM orders") == [(1, "tea")]
    assert store.load("s1") == StoredSession(make_snapshot(1), 2, None)


def test_another_applications_user_version_is_its_own(path: Path) -> None:
    sql(path, "CREATE TABLE settings (key TEXT)", "PRAGMA user_version = 7")

    store = SQLiteSessionStore(path)
    save(store, "s1", 0)

    assert SQLiteSessionStore(path).load("s1") == StoredSession(make_snapshot(), 1, None)
    assert sql(path, "PRAGMA user_version") == [(7,)]


@pytest.mark.parametrize(
    ("statements", "table", "problem"),
    [
        pytest.param(
            ["CREATE TABLE stageware_sessions (x)", "PRAGMA user_version = 7"],
            "stageware_sessions",
            "its columns are (x)",
            id="sessions, other columns",
        ),
        pytest.param(
            ["CREATE TABLE stageware_messages (id INTEGER, body TEXT)"],
            "stageware_messages",
            "there is no stageware_store_format table beside it",
            id="messages, no store",
        ),
        pytest.param(
            ["CREATE TABLE stageware_escalations (session_id TEXT)"],
            "stageware_escalations",
            "there is no stageware_store_format table beside it",
            id="escalations, no store",
        ),
        pytest.param(
            ["CREATE TABLE stageware_store_format (version TEXT)"],
            "stageware_store_format",
            "its columns are (version)",
            id="store_format, other columns",
        ),
    ],
)
def test_an_application_table_named_like_the_stores_is_refused(
    path: Path, statements: list[str], table: str, problem: str
) -> None:
    sql(path, *statements)
    before = sql(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")

    with pytest.raises(SessionError) as raised:
        save(SQLiteSessionStore(path), "s1", 0)

    message = str(raised.value)
    assert f"has a table named {table} that is not the session store's ({problem}" in message
    assert "give it a file of its own" in message
    assert sql(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") == before


def test_a_messages_table_in_a_format_3_file_is_not_adopted(path: Path) -> None:
    """Format 3 had no stageware_messages table: one there is an application's."""
    save(SQLiteSessionStore(path), "s1", 0)
    sql(
        path,
        "DROP TABLE stageware_approvals",
        "ALTER TABLE stageware_sessions DROP COLUMN approvals_pending",
        "DROP TABLE stageware_messages",
        "ALTER TABLE stageware_sessions DROP COLUMN message_count",
        "UPDATE stageware_store_format SET format = 3",
        "CREATE TABLE stageware_messages (session_id TEXT, position INTEGER, document TEXT)",
    )

    with pytest.raises(SessionError, match=r"stageware_messages .* format 3 has no such table"):
        SQLiteSessionStore(path).load("s1")


# --- Formats -------------------------------------------------------------------------------


def test_a_format_1_file_is_migrated(path: Path) -> None:
    # The layout of stageware before versioned sessions, marked through user_version.
    sql(
        path,
        "CREATE TABLE stageware_sessions (session_id TEXT PRIMARY KEY NOT NULL, "
        "document TEXT NOT NULL, updated_at TEXT NOT NULL)",
        "PRAGMA user_version = 1",
    )
    write(
        path,
        "INSERT INTO stageware_sessions VALUES ('old', ?, '2024-01-01T00:00:00Z')",
        json.dumps(make_snapshot(5)),
    )

    store = SQLiteSessionStore(path)

    assert store.load("old") == StoredSession(make_snapshot(5), 1, None)
    assert save(store, "old", 1, 6) == 2
    assert store.load("old") == StoredSession(make_snapshot(6), 2, None)
    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    assert sql(path, "PRAGMA user_version") == [(0,)]
    # On to format 5 in the same step: escalations work.
    recorded = escalation("old")
    store.save(
        "old",
        make_snapshot(7),
        expected_version=2,
        owner="w",
        lease_seconds=None,
        escalation=recorded,
    )
    assert store.open_escalation("old") == recorded


# The layout of format 2, as the stageware before escalations created it.
FORMAT_2: tuple[str, ...] = (
    "CREATE TABLE stageware_sessions (session_id TEXT PRIMARY KEY NOT NULL, "
    "version INTEGER NOT NULL, document TEXT NOT NULL, lease_owner TEXT, "
    "lease_expires_at TEXT, updated_at TEXT NOT NULL)",
    "CREATE TABLE stageware_store_format (format INTEGER NOT NULL)",
    "INSERT INTO stageware_store_format (format) VALUES (2)",
)


def test_a_format_2_file_gets_its_escalations_table(path: Path) -> None:
    sql(path, *FORMAT_2)
    write(
        path,
        "INSERT INTO stageware_sessions VALUES ('old', 4, ?, 'w', '2024-01-01T00:00:00+00:00', "
        "'2024-01-01T00:00:00Z')",
        json.dumps(make_snapshot(5)),
    )

    store = SQLiteSessionStore(path)

    loaded = store.load("old")
    assert loaded is not None
    assert (loaded.snapshot, loaded.version) == (make_snapshot(5), 4)
    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    assert sql(
        path,
        "SELECT name FROM sqlite_master WHERE tbl_name = 'stageware_escalations' ORDER BY name",
    ) == [
        ("sqlite_autoindex_stageware_escalations_1",),  # the primary key's
        ("stageware_escalations",),
        ("stageware_escalations_by_queue",),
        ("stageware_escalations_by_session",),
        ("stageware_escalations_unresolved",),
    ]
    recorded = escalation("old")
    store.save(
        "old",
        make_snapshot(6),
        expected_version=4,
        owner="w",
        lease_seconds=None,
        escalation=recorded,
    )
    assert SQLiteSessionStore(path).escalations() == [recorded]


def test_stores_opening_a_format_2_file_together_migrate_it_once(path: Path) -> None:
    sql(path, *FORMAT_2)
    stores = [SQLiteSessionStore(path) for _ in range(6)]

    def open_(index: int) -> None:
        stores[index].session_ids()

    run_threads(len(stores), open_)

    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    assert stores[0].escalations() == []


# The layout of format 3, as the stageware before append-only messages created it.
FORMAT_3: tuple[str, ...] = (
    *FORMAT_2[:-1],
    "INSERT INTO stageware_store_format (format) VALUES (3)",
    "CREATE TABLE stageware_escalations (escalation_id TEXT PRIMARY KEY NOT NULL, "
    "session_id TEXT NOT NULL, queue TEXT NOT NULL, hook TEXT NOT NULL, "
    "middleware TEXT NOT NULL, reason TEXT NOT NULL, event TEXT NOT NULL, "
    "created_at TEXT NOT NULL, status TEXT NOT NULL, claimed_by TEXT, claimed_at TEXT, "
    "resolved_by TEXT, resolved_at TEXT, resolution TEXT, comment TEXT)",
)


def test_a_format_3_file_is_split_into_message_rows_and_reads_back_the_same(
    path: Path,
) -> None:
    sql(path, *FORMAT_3)
    insert = (
        "INSERT INTO stageware_sessions VALUES (?, ?, ?, 'w', '2999-01-01T00:00:00+00:00', "
        "'2024-01-01T00:00:00Z')"
    )
    # As format 3 wrote them: the encoder's compact JSON, a lone surrogate escaped.
    old = make_snapshot(5)
    empty = {**make_snapshot(6), "messages": []}
    connection = sqlite3.connect(path)
    with connection:
        for session_id, version, snapshot in (("old", 4, old), ("empty", 1, empty)):
            document = json.dumps(snapshot, separators=(",", ":"))
            connection.execute(insert, (session_id, version, document))
        connection.execute(insert, ("damaged", 1, '{"version": 1, "messages": "no list"}'))
    connection.close()

    stores = [SQLiteSessionStore(path) for _ in range(4)]

    def open_(index: int) -> None:
        stores[index].session_ids()

    run_threads(len(stores), open_)

    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    store = stores[0]
    loaded = store.load("old")
    assert loaded is not None
    assert (loaded.snapshot, loaded.version, loaded.lease is not None) == (old, 4, True)
    assert json.dumps(loaded.snapshot) == json.dumps(old)  # the same, key order included
    empty_loaded = store.load("empty")
    assert empty_loaded is not None
    assert empty_loaded.snapshot == empty
    assert sql(path, "SELECT count(*) FROM stageware_messages") == [(3,)]
    with pytest.raises(SessionError, match=r"'damaged'.*is damaged"):
        store.load("damaged")
    # And it goes on append-only.
    turn = make_snapshot(7)
    assert (
        store.save("old", turn, expected_version=4, owner="w", lease_seconds=None, kept_messages=3)
        == 5
    )
    appended = store.load("old")
    assert appended is not None
    assert appended.snapshot == {**turn, "messages": old["messages"] + turn["messages"]}


def test_refuses_a_newer_store_format(path: Path) -> None:
    save(SQLiteSessionStore(path), "s1", 0)
    sql(path, "UPDATE stageware_store_format SET format = 6")

    store = SQLiteSessionStore(path)
    for call in every_call(store):
        with pytest.raises(SessionError, match="store format 6, written by a newer stageware"):
            call()

    sql(path, "UPDATE stageware_store_format SET format = 5")
    assert SQLiteSessionStore(path).load("s1") == StoredSession(make_snapshot(), 1, None)


def test_an_open_store_notices_a_newer_format(path: Path) -> None:
    store = SQLiteSessionStore(path)
    save(store, "s1", 0)
    sql(path, "UPDATE stageware_store_format SET format = 6")

    for call in every_call(store):
        with pytest.raises(SessionError, match=r"store format 6.*Upgrade stageware"):
            call()

    sql(path, "UPDATE stageware_store_format SET format = 5")
    assert store.load("s1") == StoredSession(make_snapshot(), 1, None)


def test_a_format_marker_that_is_no_format_is_refused(path: Path) -> None:
    save(SQLiteSessionStore(path), "s1", 0)
    sql(path, "UPDATE stageware_store_format SET format = 'two'")

    with pytest.raises(SessionError, match="holds 'two', which is not a store format"):
        SQLiteSessionStore(path).load("s1")


# --- Damaged rows --------------------------------------------------------------------------


def head(**changes: object) -> str:
    """The stored document of ``make_snapshot()``, its messages left out, with *changes*."""
    document: dict[str, object] = {**make_snapshot(), **changes}
    del document["messages"]
    return json.dumps(document)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param("{not json", "the stored document is not valid JSON", id="bad json"),
        pytest.param(b"\xff\xfe", "is not valid JSON", id="bad utf-8 blob"),
        # TEXT affinity stores the number as the text "42", which is JSON, but not an object.
        pytest.param(42, "the snapshot is an int, not a JSON object", id="a number"),
        pytest.param("[]", "the snapshot is a list, not a JSON object", id="not an object"),
        pytest.param('{"version": NaN}', "NaN is not a JSON number", id="nan"),
        pytest.param(
            head(version=7),
            "snapshot format version 7 (written by a newer stageware?); "
            "this stageware reads version 1",
            id="newer version",
        ),
        pytest.param(
            head(version=0),
            "snapshot format version 0; this stageware reads version 1",
            id="older version",
        ),
        pytest.param(
            head(version="1"),
            "field version: Input should be a valid integer, got a str",
            id="version as text",
        ),
        pytest.param(
            json.dumps({"version": 1, "state": {}, "interrupt_state": {}}),
            "field model_state: Field required",
            id="missing field",
        ),
        pytest.param(
            head(state=[]),
            "field state: Input should be a valid dictionary, got a list",
            id="wrong type",
        ),
        pytest.param(
            json.dumps(make_snapshot()),
            "the stored document holds messages, which are stored one by one",
            id="messages in the document",
        ),
    ],
)
def test_a_damaged_row_names_store_session_and_field(
    path: Path, document: object, expected: str
) -> None:
    store = SQLiteSessionStore(path)
    save(store, "s1", 0)
    write(path, "UPDATE stageware_sessions SET document = ?", document)

    with pytest.raises(SessionError) as caught:
        store.load("s1")

    message = str(caught.value)
    assert f"session 's1' in {path} is damaged" in message
    assert expected in message
    assert "lookup" not in message  # the type of a bad value is named, never its content


@pytest.mark.parametrize(
    ("statement", "value", "expected"),
    [
        pytest.param(
            "UPDATE stageware_messages SET document = ? WHERE position = 1",
            json.dumps({"role": "user", "content": [{"toolUse": {"toolUseId": "t"}}]}),
            "field messages[1].content[0].toolUse.name: Field required (and 1 more)",
            id="deep field",
        ),
        pytest.param(
            "UPDATE stageware_messages SET document = ? WHERE position = 2",
            "{not json",
            "stored message 2 is not valid JSON",
            id="bad json",
        ),
        pytest.param(
            "DELETE FROM stageware_messages WHERE position = ?",
            1,
            "its record says it has 3 messages, but the stored messages are at positions [0, 2]",
            id="lost row",
        ),
        pytest.param(
            "UPDATE stageware_sessions SET message_count = ?",
            2,
            "its record says it has 2 messages, but the stored messages are at positions [0, 1, 2]",
            id="stray row",
        ),
    ],
)
def test_a_damaged_message_row_names_store_session_and_message(
    path: Path, statement: str, value: object, expected: str
) -> None:
    store = SQLiteSessionStore(path)
    save(store, "s1", 0)
    write(path, statement, value)

    with pytest.raises(SessionError) as caught:
        store.load("s1")

    message = str(caught.value)
    assert f"session 's1' in {path} is damaged" in message
    assert expected in message
    assert "lookup" not in message


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        pytest.param("event", "{not json", "column event is not valid JSON", id="event"),
        pytest.param("event", "[1]", "column event holds a JSON list", id="event list"),
        pytest.param("status", "pending", "column status holds 'pending'", id="status"),
        pytest.param("created_at", "yesterday", "column created_at holds 'yesterday'", id="time"),
        pytest.param(
            "claimed_at", "2024-01-01T00:00:00", "not a time with its time zone", id="naive time"
        ),
        pytest.param("queue", b"\xff", "column queue holds bytes, not text", id="queue"),
    ],
)
def test_a_damaged_escalation_row_names_the_escalation_and_column(
    path: Path, column: str, value: object, expected: str
) -> None:
    store = SQLiteSessionStore(path)
    recorded = escalation()
    store.save(
        "s1",
        make_snapshot(),
        expected_version=0,
        owner="w",
        lease_seconds=None,
        escalation=recorded,
    )
    connection = sqlite3.connect(path, isolation_level=None)
    # The CHECK on status would refuse this edit; a hand edit can get past it like this.
    connection.execute("PRAGMA ignore_check_constraints = ON")
    connection.execute(f"UPDATE stageware_escalations SET {column} = ?", (value,))
    connection.close()

    with pytest.raises(SessionError) as caught:
        store.escalations()

    message = str(caught.value)
    assert f"escalation {recorded.id!r} in {path} is damaged" in message
    assert expected in message


# --- Open connections ------------------------------------------------------------------------


def _synchronous(store: SQLiteSessionStore) -> list[int]:
    """The ``synchronous`` setting of each connection the store keeps open."""
    idle = store._idle  # pyright: ignore[reportPrivateUsage]
    return [connection.execute("PRAGMA synchronous").fetchone()[0] for connection, _ in idle]


def test_calls_reuse_an_open_connection_until_the_store_closes(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteSessionStore(path)
    save(store, "s1", 0)  # creates the tables, on a connection of its own
    opened: list[object] = []
    connect = sqlite3.connect

    def counting_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(args[0])
        connection: sqlite3.Connection = connect(*args, **kwargs)
        return connection

    monkeypatch.setattr(sqlite3, "connect", counting_connect)
    version = 1
    for turn in range(1, 10):
        version = store.save(
            "s1", make_snapshot(turn), expected_version=version, owner="w", lease_seconds=30
        )
        store.renew("s1", version=version, owner="w", lease_seconds=30)
    stored = store.load("s1")
    assert stored is not None
    assert (stored.snapshot, stored.version) == (make_snapshot(9), 10)
    assert opened == []  # every call above ran on the connection the first save left open

    store.close()
    assert _synchronous(store) == []
    # Still usable: a call opens a connection again.
    assert store.session_ids() == ["s1"]
    assert len(opened) == 1


def test_a_wal_file_commits_with_synchronous_normal_and_another_keeps_full(
    tmp_path: Path,
) -> None:
    created = SQLiteSessionStore(tmp_path / "created.db")
    save(created, "s1", 0)
    assert _synchronous(created) == [1]  # NORMAL: the file is the store's, in WAL mode

    other = tmp_path / "other.db"
    sql(other, "PRAGMA journal_mode = DELETE", "CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    shared = SQLiteSessionStore(other)
    save(shared, "s1", 0)
    assert _synchronous(shared) == [2]  # FULL, SQLite's default, unsafe to lower there


def test_a_store_made_with_synchronous_full_syncs_each_commit(path: Path) -> None:
    store = SQLiteSessionStore(path, synchronous="full")
    save(store, "s1", 0)
    assert sql(path, "PRAGMA journal_mode") == [("wal",)]
    assert _synchronous(store) == [2]  # FULL: the log is synced at each commit, in WAL mode too


def test_an_unknown_synchronous_setting_is_refused(path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous must be 'full' or 'normal', not 'off'"):
        SQLiteSessionStore(path, synchronous=cast(Any, "off"))


def test_a_deleted_file_fails_the_next_call_as_before_connections_were_kept(path: Path) -> None:
    store = SQLiteSessionStore(path)
    assert save(store, "s1", 0) == 1
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        name.unlink(missing_ok=True)

    # Not a save "into" the deleted file: the path is opened anew, and its new empty
    # file has none of the store's tables.
    with pytest.raises(SessionError, match="no such table"):
        save(store, "s1", 1)


def test_a_replaced_file_is_read_at_its_path(tmp_path: Path, path: Path) -> None:
    store = SQLiteSessionStore(path)
    save(store, "s1", 0)
    other_path = tmp_path / "other.db"
    other = SQLiteSessionStore(other_path)
    save(other, "elsewhere", 0)
    other.close()  # writes the log back: the file alone holds every save
    os.replace(other_path, path)
    Path(f"{path}-wal").unlink(missing_ok=True)
    Path(f"{path}-shm").unlink(missing_ok=True)

    assert store.session_ids() == ["elsewhere"]
    assert save(store, "s2", 0) == 1
    assert sql(path, "SELECT session_id FROM stageware_sessions ORDER BY 1") == [
        ("elsewhere",),
        ("s2",),
    ]


class _LockedPragma:
    """A connection whose WAL switch fails with *errors* first, as a racing one's does."""

    def __init__(self, *errors: sqlite3.OperationalError) -> None:
        self.errors = list(errors)
        self.switches = 0

    def execute(self, statement: str) -> _LockedPragma:
        if statement == "PRAGMA journal_mode":
            return self
        self.switches += 1
        if self.errors:
            raise self.errors.pop(0)
        return self

    def fetchone(self) -> tuple[str]:
        return ("delete",)


def _sqlite_error(code: int) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = code
    return error


def test_switching_to_wal_retries_while_another_connection_holds_the_lock(path: Path) -> None:
    store = SQLiteSessionStore(path, timeout=5)
    connection = _LockedPragma(*[_sqlite_error(sqlite3.SQLITE_BUSY)] * 3)

    store._use_wal(cast("sqlite3.Connection", connection))

    assert connection.switches == 4


def test_switching_to_wal_gives_up_at_the_timeout_or_on_another_error(path: Path) -> None:
    busy = _LockedPragma(*[_sqlite_error(sqlite3.SQLITE_BUSY)] * 1000)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        SQLiteSessionStore(path, timeout=0.05)._use_wal(cast("sqlite3.Connection", busy))
    assert 2 <= busy.switches < 1000

    failing = _LockedPragma(_sqlite_error(sqlite3.SQLITE_IOERR))
    with pytest.raises(sqlite3.OperationalError):
        SQLiteSessionStore(path, timeout=5)._use_wal(cast("sqlite3.Connection", failing))
    assert failing.switches == 1


def test_a_format_4_file_gets_the_approvals_ledger_with_its_pending_approvals(
    path: Path,
) -> None:
    waiting, given = approval_id("t1"), approval_id("t2")
    store = SQLiteSessionStore(path)
    save_interrupts(store, "asked", asked(waiting), answered(given))
    save_interrupts(store, "plain")
    store.close()
    # Back to format 4's layout, as the stageware before the ledger left the file.
    sql(
        path,
        "DROP TABLE stageware_approvals",
        "ALTER TABLE stageware_sessions DROP COLUMN approvals_pending",
        "UPDATE stageware_sessions SET updated_at = '2026-04-01T09:00:00.000+00:00'",
        "UPDATE stageware_store_format SET format = 4",
    )

    migrated = SQLiteSessionStore(path)

    [pending] = migrated.approvals().entries
    assert (pending.session_id, pending.interrupt_id) == ("asked", waiting)
    # The migration knows of it only that its session was last saved then.
    assert pending.asked_at == utc("2026-04-01T09:00:00+00:00")
    approved = migrated.approval("asked", given)
    assert approved is not None
    assert (approved.status, approved.answered_by) == ("approved", "ana")
    assert sql(path, "SELECT format FROM stageware_store_format") == [(5,)]
    # The session's flag came with it: its next save, without the interrupt, lapses it.
    save_interrupts(migrated, "asked")
    lapsed = migrated.approval("asked", waiting)
    assert lapsed is not None
    assert lapsed.status == "lapsed"


def test_a_save_without_approvals_does_not_touch_the_ledger(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger costs a save nothing unless its session has, or had, a pending approval."""
    statements: list[str] = []
    connect = SQLiteSessionStore._connect  # pyright: ignore[reportPrivateUsage]

    def traced(self: SQLiteSessionStore, what: str) -> sqlite3.Connection:
        connection = connect(self, what)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(SQLiteSessionStore, "_connect", traced)
    store = SQLiteSessionStore(path)
    store.session_ids()  # the tables
    waiting = approval_id("t1")

    def ledger_statements(*interrupts: dict[str, Any]) -> list[str]:
        statements.clear()
        save_interrupts(store, "s1", *interrupts)
        return [s for s in statements if "stageware_approvals" in s]

    assert ledger_statements() == []  # created without approvals
    assert ledger_statements() == []
    assert len(ledger_statements(asked(waiting))) == 2  # the pending ones, the upsert
    assert len(ledger_statements(answered(waiting))) == 2
    # Answered: nothing pending any more, so the saves after the cycle touch nothing.
    assert ledger_statements() == []
    assert ledger_statements() == []
    store.close()
