"""The contract every store keeps, checked on memory, SQLite and Postgres alike.

A snapshot comes back exactly; a value that would not is refused and nothing is written.
Every save names the version it loaded, and a save against a session that moved on is a
``SessionConflictError`` that writes nothing. A live lease of another owner blocks saves
and renewals; the holder may save and renew; an expired or released lease blocks nobody.
"""

from __future__ import annotations

import datetime
import functools
import time
from collections.abc import Callable, Iterator
from datetime import UTC, timedelta
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest

from stageware._host.sessions import (
    Lease,
    SessionConflictError,
    SessionError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    StoredSession,
)

from .stores import counter_snapshot, make_snapshot, run_threads


def save(
    store: SessionStore,
    session_id: str,
    snapshot: SessionSnapshot,
    version: int,
    *,
    owner: str = "worker-a",
    lease_seconds: float | None = None,
) -> int:
    return store.save(
        session_id, snapshot, expected_version=version, owner=owner, lease_seconds=lease_seconds
    )


def stored(store: SessionStore, session_id: str) -> StoredSession:
    loaded = store.load(session_id)
    assert loaded is not None
    return loaded


# --- Snapshots come back exactly ----------------------------------------------------------


def test_every_store_fits_the_protocol(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)


def test_round_trip(store: SessionStore) -> None:
    assert save(store, "s1", make_snapshot(), 0) == 1

    assert store.load("s1") == StoredSession(snapshot=make_snapshot(), version=1, lease=None)


def test_load_of_unknown_session_is_none(store: SessionStore) -> None:
    assert store.load("nobody") is None


def test_each_save_bumps_the_version_of_its_own_session(store: SessionStore) -> None:
    assert save(store, "s1", make_snapshot(1), 0) == 1
    assert save(store, "s1", make_snapshot(2), 1) == 2
    assert save(store, "s2", make_snapshot(3), 0) == 1

    assert stored(store, "s1") == StoredSession(make_snapshot(2), 2, None)
    assert stored(store, "s2") == StoredSession(make_snapshot(3), 1, None)


def test_a_second_store_on_the_database_sees_the_save(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(1), 0)

    assert stored(reopen(), "s1") == StoredSession(make_snapshot(1), 1, None)


def test_delete(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0)
    save(store, "s2", make_snapshot(2), 0)

    store.delete("s1")
    store.delete("s1")  # deleting again, or an unknown id, is not an error
    store.delete("never")

    assert store.load("s1") is None
    assert stored(store, "s2").snapshot == make_snapshot(2)
    assert save(store, "s1", make_snapshot(3), 0) == 1  # created anew


def test_keys_the_snapshot_types_do_not_declare_survive(store: SessionStore) -> None:
    # Shape validation must not drop data: a block from a newer payload schema round-trips.
    snapshot = make_snapshot()
    cast(dict[str, Any], snapshot["messages"][0]["content"][0])["citation"] = {"page": 3}
    cast(dict[str, Any], snapshot)["extra"] = [1]
    save(store, "s1", snapshot, 0)

    assert stored(store, "s1").snapshot == snapshot


def test_loads_are_copies(store: SessionStore) -> None:
    snapshot = make_snapshot()
    save(store, "s1", snapshot, 0)
    snapshot["state"]["turn"] = 99

    loaded = stored(store, "s1").snapshot
    loaded["messages"].clear()

    assert stored(store, "s1").snapshot == make_snapshot()


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
    save(store, "s1", make_snapshot(1), 0)
    bad = make_snapshot(2)
    damage(bad)

    with pytest.raises(SessionError) as caught:
        save(store, "s1", bad, 1)

    message = str(caught.value)
    assert "'s1'" in message
    assert expected in message
    assert "nothing was written" in message
    assert stored(store, "s1") == StoredSession(make_snapshot(1), 1, None)

    with pytest.raises(SessionError):
        save(store, "s2", bad, 0)
    assert store.load("s2") is None


# --- Session ids ----------------------------------------------------------------------------


def calls_with_id(store: SessionStore, session_id: Any) -> list[Callable[[], object]]:
    return [
        lambda: store.load(session_id),
        lambda: save(store, session_id, make_snapshot(), 0),
        lambda: store.renew(session_id, version=1, owner="worker-a", lease_seconds=1),
        lambda: store.delete(session_id),
    ]


@pytest.mark.parametrize(
    ("session_id", "expected"),
    [
        pytest.param("", "must not be empty", id="empty"),
        pytest.param("a\ud800b", "lone surrogate", id="lone surrogate"),
        pytest.param("a\x00b", "NUL character", id="nul"),
        pytest.param(7, "must be a str, got int", id="not a str"),
    ],
)
def test_an_id_no_database_can_key_is_a_session_error(
    store: SessionStore, session_id: object, expected: str
) -> None:
    for call in calls_with_id(store, session_id):
        with pytest.raises(SessionError, match=expected):
            call()


def test_ids_are_text_compared_exactly(store: SessionStore) -> None:
    ids = ["s1", "S1", "s1 ", "é", "e\u0301", "🙂", "x" * 500]
    for index, session_id in enumerate(ids):
        save(store, session_id, make_snapshot(index), 0)

    assert [stored(store, session_id).snapshot["state"]["turn"] for session_id in ids] == list(
        range(len(ids))
    )


# --- Conditional saves --------------------------------------------------------------------


def test_a_save_against_a_newer_version_is_refused_and_writes_nothing(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(1), 0)
    other = reopen()
    save(other, "s1", make_snapshot(2), 1, owner="worker-b")

    with pytest.raises(SessionConflictError) as caught:
        save(store, "s1", make_snapshot(3), 1)

    error = caught.value
    assert type(error) is SessionConflictError
    assert (error.session_id, error.expected_version, error.found_version) == ("s1", 1, 2)
    message = str(error)
    assert "session 's1'" in message
    assert "loaded version 1, the store holds version 2" in message
    assert "nothing was written" in message
    assert stored(store, "s1") == StoredSession(make_snapshot(2), 2, None)


def test_a_save_at_a_version_the_session_never_had_is_refused(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0)

    with pytest.raises(SessionConflictError) as caught:
        save(store, "s1", make_snapshot(2), 5)

    assert (caught.value.expected_version, caught.value.found_version) == (5, 1)
    assert stored(store, "s1").version == 1


def test_creating_a_session_that_exists_is_refused(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0)

    with pytest.raises(SessionConflictError, match="another worker created it first") as caught:
        save(store, "s1", make_snapshot(2), 0, owner="worker-b")

    assert (caught.value.expected_version, caught.value.found_version) == (0, 1)
    assert stored(store, "s1") == StoredSession(make_snapshot(1), 1, None)


def test_a_save_of_a_deleted_session_is_refused(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0)
    store.delete("s1")

    with pytest.raises(SessionConflictError, match="no longer exists") as caught:
        save(store, "s1", make_snapshot(2), 1)

    assert (caught.value.expected_version, caught.value.found_version) == (1, 0)
    assert store.load("s1") is None


def test_of_many_creators_exactly_one_wins(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    stores = [store, *(reopen() for _ in range(5))]
    won: list[int] = []
    lost: list[SessionConflictError] = []

    def create(index: int) -> None:
        try:
            save(stores[index], "s1", make_snapshot(index), 0, owner=f"w{index}")
            won.append(index)
        except SessionConflictError as error:
            lost.append(error)

    run_threads(len(stores), create)

    assert len(won) == 1
    assert len(lost) == len(stores) - 1
    assert {(e.expected_version, e.found_version) for e in lost} == {(0, 1)}
    assert stored(store, "s1") == StoredSession(make_snapshot(won[0]), 1, None)


def test_threads_that_retry_on_conflict_lose_no_update(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    threads, rounds = 6, 15
    stores = [store, *(reopen() for _ in range(threads - 1))]
    save(store, "counter", counter_snapshot(0), 0)

    def increment(index: int) -> None:
        for _ in range(rounds):
            while True:
                current = stored(stores[index], "counter")
                count = current.snapshot["state"]["count"]
                try:
                    save(stores[index], "counter", counter_snapshot(count + 1), current.version)
                    break
                except SessionConflictError:
                    continue

    run_threads(threads, increment)

    final = stored(store, "counter")
    assert final.snapshot["state"]["count"] == threads * rounds
    assert final.version == threads * rounds + 1


# --- Leases -------------------------------------------------------------------------------


def test_a_lease_is_stored_with_its_owner_and_expiry(store: SessionStore) -> None:
    before = datetime.datetime.now(UTC)
    save(store, "s1", make_snapshot(), 0, owner="worker-a", lease_seconds=30)
    after = datetime.datetime.now(UTC)

    lease = stored(store, "s1").lease
    assert lease is not None
    assert lease.owner == "worker-a"
    assert lease.expires_at.utcoffset() == timedelta(0)
    # The store's clock (a database server's, for Postgres) runs on this machine here.
    slack = timedelta(seconds=1)
    assert before + timedelta(seconds=30) - slack <= lease.expires_at
    assert lease.expires_at <= after + timedelta(seconds=30) + slack


def test_a_live_lease_blocks_another_owner_and_writes_nothing(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=30)
    other = reopen()

    with pytest.raises(SessionLeasedError) as caught:
        save(other, "s1", make_snapshot(2), 1, owner="worker-b")

    error = caught.value
    assert isinstance(error, SessionConflictError)
    assert (error.session_id, error.expected_version, error.found_version) == ("s1", 1, 1)
    assert error.lease == stored(store, "s1").lease
    assert "in use by worker 'worker-a'" in str(error)
    assert "nothing was written" in str(error)
    with pytest.raises(SessionLeasedError):
        other.renew("s1", version=1, owner="worker-b", lease_seconds=30)
    assert stored(store, "s1").snapshot == make_snapshot(1)
    assert stored(store, "s1").lease == error.lease


def test_the_holder_saves_and_renews(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=5)
    first = stored(store, "s1").lease
    assert first is not None

    assert save(store, "s1", make_snapshot(2), 1, owner="worker-a", lease_seconds=10) == 2
    second = stored(store, "s1").lease
    assert second is not None
    assert second.owner == "worker-a"
    assert second.expires_at > first.expires_at

    store.renew("s1", version=2, owner="worker-a", lease_seconds=60)

    renewed = stored(store, "s1")
    assert renewed.version == 2  # a renewal is not a save
    assert renewed.snapshot == make_snapshot(2)
    assert renewed.lease is not None
    assert renewed.lease.expires_at - second.expires_at > timedelta(seconds=45)


def test_an_expired_lease_blocks_nobody(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    other = reopen()
    other.load("s1")  # connected, so that the refusal below comes well within the lease
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=0.5)
    with pytest.raises(SessionLeasedError):
        save(other, "s1", make_snapshot(2), 1, owner="worker-b", lease_seconds=30)

    time.sleep(0.6)

    assert save(other, "s1", make_snapshot(2), 1, owner="worker-b", lease_seconds=30) == 2
    taken = stored(store, "s1").lease
    assert taken is not None
    assert taken.owner == "worker-b"
    with pytest.raises(SessionLeasedError):
        save(store, "s1", make_snapshot(3), 2, owner="worker-a")


def test_an_expired_lease_nobody_took_over_can_be_renewed(store: SessionStore) -> None:
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=0.1)
    time.sleep(0.2)

    store.renew("s1", version=1, owner="worker-a", lease_seconds=30)

    lease = stored(store, "s1").lease
    assert lease is not None
    assert lease.expires_at > datetime.datetime.now(UTC) + timedelta(seconds=20)


def test_a_save_without_a_lease_releases_it(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=30)

    save(store, "s1", make_snapshot(2), 1, owner="worker-a", lease_seconds=None)

    assert stored(store, "s1").lease is None
    assert save(reopen(), "s1", make_snapshot(3), 2, owner="worker-b") == 3


def test_renewing_after_a_conflicting_save_fails(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(1), 0, owner="worker-a", lease_seconds=0.2)
    time.sleep(0.3)
    # Worker A's lease lapsed; worker B took the session over with a save.
    save(reopen(), "s1", make_snapshot(2), 1, owner="worker-b", lease_seconds=None)

    with pytest.raises(SessionConflictError) as caught:
        store.renew("s1", version=1, owner="worker-a", lease_seconds=30)

    assert type(caught.value) is SessionConflictError
    assert (caught.value.expected_version, caught.value.found_version) == (1, 2)
    assert stored(store, "s1") == StoredSession(make_snapshot(2), 2, None)


def test_renewing_a_missing_session_is_a_conflict(store: SessionStore) -> None:
    with pytest.raises(SessionConflictError, match="no longer exists"):
        store.renew("s1", version=1, owner="worker-a", lease_seconds=30)
    assert store.load("s1") is None


def test_renewing_needs_a_saved_version(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="a lease is first taken by a save"):
        store.renew("s1", version=0, owner="worker-a", lease_seconds=30)


def test_a_refused_lease_names_the_holder_and_when_it_ends(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", make_snapshot(), 0, owner="host-1/42/ab", lease_seconds=30)

    with pytest.raises(SessionLeasedError) as caught:
        save(reopen(), "s1", make_snapshot(), 1, owner="host-2/7/cd")

    lease = caught.value.lease
    assert isinstance(lease, Lease)
    assert lease.owner == "host-1/42/ab"
    assert lease.expires_at.isoformat(timespec="milliseconds") in str(caught.value)


# --- From async code ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_code_calls_the_store_on_worker_threads(store: SessionStore) -> None:
    # The agent's way: one call per worker thread, many at once, on asyncio and trio.
    async def round_trip(index: int) -> None:
        session_id = f"s{index}"
        version = await anyio.to_thread.run_sync(
            lambda: save(store, session_id, make_snapshot(index), 0)
        )
        for turn in range(3):
            version = await anyio.to_thread.run_sync(
                functools.partial(save, store, session_id, make_snapshot(turn), version)
            )
        loaded = await anyio.to_thread.run_sync(store.load, session_id)
        assert loaded == StoredSession(make_snapshot(2), 4, None)

    async with anyio.create_task_group() as group:
        for index in range(12):
            group.start_soon(round_trip, index)
