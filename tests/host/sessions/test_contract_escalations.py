"""The escalation contract every store keeps, checked on memory, SQLite and Postgres alike.

An escalation is recorded by a session's save, in the same transaction: a refused or
failed save records none. A session has at most one unresolved escalation. Humans list
escalations per queue, claim one (of two claimers exactly one wins) and resolve it; a
claim belongs to its claimer unless another resolver takes it over. None of that changes
the session itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stageware import (
    Escalation,
    EscalationError,
    SessionConflictError,
    SessionError,
    SessionEscalatedError,
    SessionLeasedError,
    SessionStore,
    StoredSession,
)

from .approvals import approval_id, asked, with_interrupts
from .stores import make_snapshot, run_threads

EVENT: dict[str, Any] = {
    "tool_use": {"toolUseId": "t1", "name": "refund", "input": {"amount": 900}},
    # Text the databases find awkward, inside the event's JSON.
    "notes": ["é", "\ud800", "a\x00b", None, 2.5, True],
}


def escalation(session_id: str = "s1", queue: str = "refunds", **changes: Any) -> Escalation:
    made = Escalation.new(
        session_id,
        queue=queue,
        hook="tool.before",
        middleware="refund_limit",
        reason="a refund of 900 is over the limit of 500",
        event=EVENT,
    )
    return dataclasses.replace(made, **changes)


def save(
    store: SessionStore,
    session_id: str,
    version: int,
    *,
    turn: int = 0,
    owner: str = "worker-a",
    lease_seconds: float | None = None,
    escalated: Escalation | None = None,
) -> int:
    return store.save(
        session_id,
        make_snapshot(turn),
        expected_version=version,
        owner=owner,
        lease_seconds=lease_seconds,
        escalation=escalated,
    )


def escalate(store: SessionStore, session_id: str = "s1", **changes: Any) -> Escalation:
    """A session at version 1 whose save recorded an escalation; the escalation."""
    recorded = escalation(session_id, **changes)
    save(store, session_id, 0, escalated=recorded)
    return recorded


def stored(store: SessionStore, session_id: str) -> StoredSession:
    loaded = store.load(session_id)
    assert loaded is not None
    return loaded


# --- Recorded with the save ------------------------------------------------------------


def test_a_save_records_its_escalation(store: SessionStore) -> None:
    recorded = escalation()
    assert save(store, "s1", 0, escalated=recorded) == 1

    assert store.open_escalation("s1") == recorded
    assert store.escalations() == [recorded]
    assert recorded.status == "open"
    assert recorded.unresolved
    assert stored(store, "s1") == StoredSession(make_snapshot(), 1, None)


def test_an_escalation_comes_back_exactly(store: SessionStore) -> None:
    recorded = escalate(
        store, reason="ünïcode reason", created_at=datetime(2024, 5, 1, 12, 0, 0, 123456, UTC)
    )

    found = store.open_escalation("s1")

    assert found == recorded
    assert found is not None
    assert found.event == EVENT
    assert found.created_at == datetime(2024, 5, 1, 12, 0, 0, 123456, UTC)
    assert found.created_at.tzinfo is not None
    assert found.created_at.utcoffset() == timedelta(0)


def test_a_time_in_another_zone_is_kept_as_utc(store: SessionStore) -> None:
    plus_two = datetime(2024, 5, 1, 14, 0, tzinfo=UTC).astimezone(
        datetime.now(UTC).astimezone().tzinfo
    )
    escalate(store, created_at=plus_two)

    found = store.open_escalation("s1")

    assert found is not None
    assert found.created_at == datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
    assert found.created_at.tzinfo == UTC


def test_escalations_are_copies(store: SessionStore) -> None:
    recorded = escalate(store)
    recorded.event["tool_use"]["input"]["amount"] = 1

    found = store.open_escalation("s1")
    assert found is not None
    assert found.event == EVENT
    found.event.clear()

    assert store.escalations()[0].event == EVENT


def test_a_second_store_on_the_database_sees_the_escalation(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    recorded = escalate(store)

    assert reopen().open_escalation("s1") == recorded


def test_an_update_records_an_escalation_too(store: SessionStore) -> None:
    save(store, "s1", 0)
    recorded = escalation()

    assert save(store, "s1", 1, turn=1, escalated=recorded) == 2

    assert store.open_escalation("s1") == recorded
    assert stored(store, "s1").snapshot == make_snapshot(1)


# --- A refused or failed save records nothing --------------------------------------------


def test_a_conflicting_save_records_no_escalation(store: SessionStore) -> None:
    save(store, "s1", 0)
    save(store, "s1", 1, turn=1)

    with pytest.raises(SessionConflictError):
        save(store, "s1", 1, turn=2, escalated=escalation())

    assert store.open_escalation("s1") is None
    assert store.escalations() == []
    assert stored(store, "s1") == StoredSession(make_snapshot(1), 2, None)


def test_creating_a_session_that_exists_records_no_escalation(store: SessionStore) -> None:
    save(store, "s1", 0)

    with pytest.raises(SessionConflictError):
        save(store, "s1", 0, turn=5, escalated=escalation())

    assert store.escalations() == []
    assert stored(store, "s1") == StoredSession(make_snapshot(), 1, None)


def test_a_save_refused_by_a_lease_records_no_escalation(store: SessionStore) -> None:
    save(store, "s1", 0, owner="holder", lease_seconds=30)

    with pytest.raises(SessionLeasedError):
        save(store, "s1", 1, turn=1, owner="other", escalated=escalation())

    assert store.escalations() == []
    assert stored(store, "s1").snapshot == make_snapshot()


def test_a_snapshot_that_cannot_be_stored_records_no_escalation(store: SessionStore) -> None:
    snapshot = make_snapshot()
    snapshot["state"]["bad"] = {1, 2}

    with pytest.raises(SessionError, match=r"state\.bad is a set"):
        store.save(
            "s1",
            snapshot,
            expected_version=0,
            owner="w",
            lease_seconds=None,
            escalation=escalation(),
        )

    assert store.load("s1") is None
    assert store.escalations() == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({"session_id": "s2"}, "is of session 's2'", id="another session"),
        pytest.param({"status": "claimed"}, "escalation '.*' is claimed", id="not open"),
        pytest.param({"reason": "a\x00b"}, "escalation.reason contains a NUL", id="nul"),
        pytest.param({"queue": ""}, "escalation.queue must not be empty", id="empty queue"),
        pytest.param({"event": {"at": datetime(2024, 1, 1)}}, "event.at is a datetime", id="event"),
        pytest.param({"event": [1]}, "event is a list, not a JSON object", id="event list"),
        pytest.param(
            {"created_at": datetime(2024, 1, 1)},
            "created_at must be a timezone-aware datetime",
            id="naive time",
        ),
    ],
)
def test_an_escalation_that_is_not_a_new_one_of_the_session_is_refused(
    store: SessionStore, changes: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SessionError, match=expected) as caught:
        save(store, "s1", 0, escalated=dataclasses.replace(escalation(), **changes))

    assert "nothing was written" in str(caught.value)
    assert store.load("s1") is None
    assert store.escalations() == []


def test_a_second_unresolved_escalation_is_refused_and_nothing_is_written(
    store: SessionStore,
) -> None:
    first = escalate(store)

    with pytest.raises(SessionError, match=f"already waits on escalation {first.id}"):
        save(store, "s1", 1, turn=1, escalated=escalation())

    assert store.escalations() == [first]
    assert stored(store, "s1") == StoredSession(make_snapshot(), 1, None)

    store.resolve_escalation(first.id, by="ana", resolution="done")
    second = escalation()
    assert save(store, "s1", 1, turn=1, escalated=second) == 2
    assert store.open_escalation("s1") == second


def test_an_escalation_id_that_exists_rolls_the_whole_save_back(store: SessionStore) -> None:
    # The database's own refusal (a duplicate key), after the session's row was written in
    # the same transaction: the session must be as it was.
    first = escalate(store)
    store.resolve_escalation(first.id, by="ana", resolution="done")

    with pytest.raises(SessionError, match=first.id):
        save(store, "s1", 1, turn=1, escalated=escalation(id=first.id))

    assert stored(store, "s1") == StoredSession(make_snapshot(), 1, None)
    assert [e.status for e in store.escalations()] == ["resolved"]


# --- Listing ---------------------------------------------------------------------------


def test_open_escalation_of_a_session_without_one_is_none(store: SessionStore) -> None:
    save(store, "plain", 0)

    assert store.open_escalation("plain") is None
    assert store.open_escalation("never-saved") is None


def test_escalations_by_queue_and_status_oldest_first(store: SessionStore) -> None:
    start = datetime(2024, 5, 1, tzinfo=UTC)
    # Recorded newest first, so the order is the store's sort, not insertion.
    late = escalate(store, "s1", created_at=start + timedelta(minutes=2))
    early = escalate(store, "s2", created_at=start)
    other = escalate(store, "s3", queue="fraud", created_at=start + timedelta(minutes=1))
    claimed = store.claim_escalation(early.id, by="ana")

    assert store.escalations() == [claimed, other, late]
    assert store.escalations("refunds") == [claimed, late]
    assert store.escalations("refunds", status="open") == [late]
    assert store.escalations(status="claimed") == [claimed]
    assert store.escalations("fraud", status="resolved") == []
    assert store.escalations("nobody") == []


def test_a_status_that_is_not_one_is_refused(store: SessionStore) -> None:
    with pytest.raises(SessionError, match="status must be one of open, claimed, resolved"):
        store.escalations(status="pending")  # type: ignore[arg-type]


def test_session_ids_are_sorted_by_code_point(store: SessionStore) -> None:
    assert store.session_ids() == []
    for session_id in ["b", "é", "a", "Z", "a-1"]:
        save(store, session_id, 0)

    assert store.session_ids() == ["Z", "a", "a-1", "b", "é"]


def test_delete_forgets_the_sessions_escalations_only(store: SessionStore) -> None:
    escalate(store, "s1")
    kept = escalate(store, "s2")

    store.delete("s1")

    assert store.open_escalation("s1") is None
    assert store.escalations() == [kept]
    assert store.session_ids() == ["s2"]
    # A new session under the old id starts clean.
    assert save(store, "s1", 0) == 1


# --- Claiming ----------------------------------------------------------------------------


def test_a_claim_marks_the_escalation_and_leaves_the_session_alone(store: SessionStore) -> None:
    recorded = escalate(store)
    save_before = stored(store, "s1")
    before = datetime.now(UTC) - timedelta(seconds=5)

    claimed = store.claim_escalation(recorded.id, by="ana")

    assert claimed == dataclasses.replace(
        recorded, status="claimed", claimed_by="ana", claimed_at=claimed.claimed_at
    )
    assert claimed.claimed_at is not None
    assert before < claimed.claimed_at < datetime.now(UTC) + timedelta(seconds=5)
    assert claimed.unresolved
    assert store.open_escalation("s1") == claimed
    assert stored(store, "s1") == save_before


def test_claiming_ones_own_claim_again_changes_nothing(store: SessionStore) -> None:
    recorded = escalate(store)
    claimed = store.claim_escalation(recorded.id, by="ana")

    assert store.claim_escalation(recorded.id, by="ana") == claimed


def test_a_claim_by_another_is_refused(store: SessionStore) -> None:
    recorded = escalate(store)
    claimed = store.claim_escalation(recorded.id, by="ana")

    with pytest.raises(EscalationError, match="'ana' claimed it") as caught:
        store.claim_escalation(recorded.id, by="bo")

    assert caught.value.escalation == claimed
    assert caught.value.escalation_id == recorded.id
    assert store.open_escalation("s1") == claimed


def test_an_unknown_id_is_refused(store: SessionStore) -> None:
    attempts: list[Callable[[], object]] = [
        lambda: store.claim_escalation("nope", by="ana"),
        lambda: store.resolve_escalation("nope", by="ana", resolution="x"),
    ]
    for attempt in attempts:
        with pytest.raises(EscalationError, match="holds no escalation with that id") as caught:
            attempt()
        assert caught.value.escalation is None
        assert caught.value.escalation_id == "nope"


@pytest.mark.parametrize("by", ["", "a\x00b", "\ud800"])
def test_a_name_no_store_can_keep_is_refused(store: SessionStore, by: str) -> None:
    recorded = escalate(store)

    with pytest.raises(SessionError, match="by "):
        store.claim_escalation(recorded.id, by=by)
    with pytest.raises(SessionError, match="by "):
        store.resolve_escalation(recorded.id, by=by, resolution="done")

    assert store.open_escalation("s1") == recorded


def test_of_many_claimers_exactly_one_wins(store: SessionStore) -> None:
    recorded = escalate(store)
    won: list[str] = []
    refused: list[str] = []

    def claim(index: int) -> None:
        try:
            store.claim_escalation(recorded.id, by=f"human-{index}")
            won.append(f"human-{index}")
        except EscalationError:
            refused.append(f"human-{index}")

    run_threads(8, claim)

    assert len(won) == 1
    assert len(refused) == 7
    found = store.open_escalation("s1")
    assert found is not None
    assert found.claimed_by == won[0]


# --- Resolving ---------------------------------------------------------------------------


def test_anyone_may_resolve_an_open_escalation(store: SessionStore) -> None:
    recorded = escalate(store)
    session = stored(store, "s1")

    resolved = store.resolve_escalation(
        recorded.id, by="bo", resolution="refunded by hand", comment="customer called"
    )

    assert resolved == dataclasses.replace(
        recorded,
        status="resolved",
        resolved_by="bo",
        resolved_at=resolved.resolved_at,
        resolution="refunded by hand",
        comment="customer called",
    )
    assert resolved.resolved_at is not None
    assert not resolved.unresolved
    assert store.open_escalation("s1") is None
    assert store.escalations(status="resolved") == [resolved]
    assert stored(store, "s1") == session


def test_the_claimer_resolves_its_claim(store: SessionStore) -> None:
    recorded = escalate(store)
    claimed = store.claim_escalation(recorded.id, by="ana")

    resolved = store.resolve_escalation(recorded.id, by="ana", resolution="denied")

    assert (resolved.claimed_by, resolved.claimed_at) == ("ana", claimed.claimed_at)
    assert (resolved.resolved_by, resolved.resolution, resolved.comment) == (
        "ana",
        "denied",
        None,
    )


def test_another_humans_claim_refuses_a_resolution_unless_taken_over(
    store: SessionStore,
) -> None:
    recorded = escalate(store)
    claimed = store.claim_escalation(recorded.id, by="ana")

    with pytest.raises(EscalationError, match=r"'ana' claimed it.*take_over=True"):
        store.resolve_escalation(recorded.id, by="bo", resolution="refunded")
    assert store.open_escalation("s1") == claimed

    resolved = store.resolve_escalation(recorded.id, by="bo", resolution="refunded", take_over=True)
    assert (resolved.claimed_by, resolved.resolved_by, resolved.status) == (
        "ana",
        "bo",
        "resolved",
    )


def test_a_resolved_escalation_is_neither_claimed_nor_resolved_again(
    store: SessionStore,
) -> None:
    recorded = escalate(store)
    resolved = store.resolve_escalation(recorded.id, by="ana", resolution="done")

    attempts: list[Callable[[], object]] = [
        lambda: store.claim_escalation(recorded.id, by="bo"),
        lambda: store.resolve_escalation(recorded.id, by="ana", resolution="again"),
        lambda: store.resolve_escalation(recorded.id, by="bo", resolution="x", take_over=True),
    ]
    for attempt in attempts:
        with pytest.raises(EscalationError, match="'ana' resolved it already") as caught:
            attempt()
        assert caught.value.escalation == resolved

    assert store.escalations() == [resolved]


def test_of_many_resolvers_exactly_one_wins(store: SessionStore) -> None:
    recorded = escalate(store)
    won: list[int] = []

    def resolve(index: int) -> None:
        try:
            store.resolve_escalation(recorded.id, by=f"human-{index}", resolution=str(index))
            won.append(index)
        except EscalationError:
            pass

    run_threads(8, resolve)

    assert len(won) == 1
    [resolved] = store.escalations()
    assert (resolved.resolved_by, resolved.resolution) == (f"human-{won[0]}", str(won[0]))


def test_an_empty_comment_is_kept_and_an_empty_resolution_refused(store: SessionStore) -> None:
    recorded = escalate(store)

    with pytest.raises(SessionError, match="resolution must not be empty"):
        store.resolve_escalation(recorded.id, by="ana", resolution="")

    resolved = store.resolve_escalation(recorded.id, by="ana", resolution="ok", comment="")
    assert resolved.comment == ""
    assert store.escalations()[0].comment == ""


# --- The error an agent raises -------------------------------------------------------------


def test_the_escalated_error_names_the_escalation_and_how_to_resolve_it() -> None:
    recorded = escalation()

    error = SessionEscalatedError(recorded)

    message = str(error)
    assert error.escalation is recorded
    assert isinstance(error, SessionError)
    assert "session 's1' waits for a human" in message
    assert f"escalation {recorded.id} in queue 'refunds'" in message
    assert "refund_limit at tool.before: 'a refund of 900 is over the limit of 500'" in message
    assert f"store.resolve_escalation({recorded.id!r}" in message
    assert f"stageware policy escalations --store URL --resolve {recorded.id}" in message


def test_new_checks_its_values_where_the_escalation_is_made() -> None:
    made = escalation()
    assert len(made.id) == 32
    int(made.id, 16)
    assert made.created_at.tzinfo == UTC
    assert escalation().id != made.id

    cases: list[tuple[dict[str, Any], str]] = [
        ({"queue": ""}, "queue must not be empty"),
        ({"middleware": "a\x00"}, "middleware contains a NUL"),
        ({"hook": "\ud800"}, "hook has a lone surrogate"),
        ({"event": {"x": {1, 2}}}, r"the event.x is a set"),
        ({"event": [1]}, "the event is a list, not a JSON object"),
    ]
    for changes, expected in cases:
        arguments: dict[str, Any] = {
            "queue": "q",
            "hook": "tool.before",
            "middleware": "m",
            "reason": "",
            "event": {},
            **changes,
        }
        with pytest.raises(ValueError, match=expected):
            Escalation.new("s1", **arguments)


def test_escalations_come_in_pages_oldest_first(store: SessionStore) -> None:
    start = datetime(2024, 5, 1, tzinfo=UTC)
    # Recorded out of order, and two at the same time (then by id).
    recorded = [
        escalate(store, f"s{number}", created_at=start + timedelta(minutes=minutes))
        for number, minutes in enumerate([5, 0, 3, 3, 1, 4, 2])
    ]
    expected = sorted(recorded, key=lambda e: (e.created_at, e.id))
    elsewhere = escalate(store, "elsewhere", queue="fraud", created_at=start)

    first = store.escalation_page("refunds", limit=3)
    assert (first.entries, first.total) == (expected[:3], 7)
    # An escalation recorded between two pages, later than the ones listed, comes last.
    added = escalate(store, "s9", created_at=start + timedelta(minutes=9))
    second = store.escalation_page("refunds", limit=3, after=first.next_cursor)
    assert second.entries == expected[3:6]
    last = store.escalation_page("refunds", limit=3, after=second.next_cursor)
    assert (last.entries, last.next_cursor, last.total) == ([expected[6], added], None, 8)

    assert store.escalation_page(limit=500).total == 9
    before = store.escalation_page(created_before=start + timedelta(minutes=2))
    assert before.entries == sorted([elsewhere, *expected[:2]], key=lambda e: (e.created_at, e.id))
    store.claim_escalation(expected[0].id, by="ana")
    claimed = store.escalation_page(status="claimed")
    assert [e.id for e in claimed.entries] == [expected[0].id]
    assert claimed.total == 1


def test_escalations_come_in_pages_newest_first_when_asked(store: SessionStore) -> None:
    start = datetime(2024, 5, 1, tzinfo=UTC)
    recorded = [
        escalate(store, f"s{number}", created_at=start + timedelta(minutes=minutes))
        for number, minutes in enumerate([5, 0, 3, 3, 1, 4, 2])
    ]
    expected = sorted(recorded, key=lambda e: (e.created_at, e.id), reverse=True)

    first = store.escalation_page(limit=3, newest_first=True)
    assert (first.entries, first.total) == (expected[:3], 7)
    # An escalation recorded between two pages, newer than the ones listed, is not on a
    # later page: those go on from where the first ended, towards the oldest.
    escalate(store, "s9", created_at=start + timedelta(minutes=9))
    second = store.escalation_page(limit=3, after=first.next_cursor, newest_first=True)
    assert second.entries == expected[3:6]
    last = store.escalation_page(limit=3, after=second.next_cursor, newest_first=True)
    assert (last.entries, last.next_cursor, last.total) == ([expected[6]], None, 8)

    before = store.escalation_page(
        created_before=start + timedelta(minutes=3, seconds=1), newest_first=True
    )
    assert before.entries == expected[2:]
    # A cursor of one order is not read as a place in the other.
    with pytest.raises(SessionError, match="ordered by 'newest created', this one is ordered"):
        store.escalation_page(after=first.next_cursor)
    with pytest.raises(SessionError, match="newest_first must be a bool, got 'yes'"):
        store.escalation_page(newest_first="yes")  # type: ignore[arg-type]


def test_an_escalation_is_looked_up_by_id_in_any_status(store: SessionStore) -> None:
    recorded = escalate(store, "s1")
    other = escalate(store, "s2", queue="fraud")
    assert store.escalation(recorded.id) == recorded
    assert store.escalation(other.id) == other
    assert store.escalation("no-such-escalation") is None

    claimed = store.claim_escalation(recorded.id, by="ana")
    assert store.escalation(recorded.id) == claimed
    resolved = store.resolve_escalation(recorded.id, by="ana", resolution="refunded by hand")
    assert store.escalation(recorded.id) == resolved
    assert resolved.status == "resolved"
    # A lookup claims nothing and leaves the session alone.
    assert store.escalation(other.id) == other
    assert stored(store, "s2").version == 1

    store.delete("s1")
    assert store.escalation(recorded.id) is None
    for bad in ("", None, 7):
        with pytest.raises(SessionError, match="its id must be a non-empty str"):
            store.escalation(bad)  # type: ignore[arg-type]


def test_a_bad_escalation_page_is_refused_with_what_is_wrong(store: SessionStore) -> None:
    with pytest.raises(SessionError, match="limit must be an int from 1 to 500, got 0"):
        store.escalation_page(limit=0)
    with pytest.raises(SessionError, match="status must be one of open, claimed, resolved"):
        store.escalation_page(status="pending")  # type: ignore[arg-type]
    with pytest.raises(SessionError, match="created_before must be a timezone-aware datetime"):
        store.escalation_page(created_before=datetime(2024, 1, 1))
    with pytest.raises(SessionError, match="is not a cursor of this listing"):
        store.escalation_page(after="garbage")
    for number in range(2):
        store.save(
            f"a{number}",
            with_interrupts(asked(approval_id("t1"))),
            expected_version=0,
            owner="w",
            lease_seconds=None,
        )
    cursor = store.approvals(limit=1).next_cursor
    with pytest.raises(SessionError, match="ordered by 'asked', this one is ordered by 'created'"):
        store.escalation_page(after=cursor)
