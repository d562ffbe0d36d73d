"""The approvals ledger every store keeps, checked on memory, SQLite and Postgres alike.

A save enters each policy approval its interrupt state holds; an answer recorded in the
state makes the entry approved or denied with the verified approver, a timeout record
makes it lapsed, and a pending approval whose interrupt left the state lapses. Entries
outlive their interrupts (the audit) and go with their session. ``approvals`` pages them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from stageware import ApprovalEntry, SessionError, SessionStore
from stageware._host.sessions._approval_rows import observe, parse_policy_id
from stageware._policy._approval import parse_interrupt_id, read_record

from .approvals import answered, approval_id, asked, save, timed_out, utc

REFUND = approval_id("t1")
OTHER = approval_id("t2")


def entry(store: SessionStore, session_id: str, identifier: str) -> ApprovalEntry:
    found = store.approval(session_id, identifier)
    assert found is not None
    return found


def test_a_suspended_step_is_pending_with_its_reason(store: SessionStore) -> None:
    before = datetime.now(UTC)
    save(store, "s1", asked(REFUND))

    [pending] = store.approvals().entries

    assert pending == entry(store, "s1", REFUND)
    assert pending.session_id == "s1"
    assert pending.interrupt_id == REFUND
    assert (pending.hook, pending.middleware) == ("tool.before", "refund_guard")
    assert pending.status == "pending"
    assert pending.reason["reason"] == "a refund over 500 needs a manager"
    assert pending.reason["step"] == {"tool": "refund", "input": {"amount": 900}}
    assert pending.reason["approvers"] == ["manager"]
    assert before - timedelta(seconds=5) <= pending.asked_at <= datetime.now(UTC)
    assert pending.asked_at.tzinfo is not None
    assert (pending.answered_by, pending.roles, pending.answered_at) == (None, (), None)
    # Saved again (a checkpoint of the same cycle): still the one entry, first asked_at.
    save(store, "s1", asked(REFUND))
    assert store.approvals().entries == [pending]
    assert store.approval("s1", OTHER) is None
    assert store.approval("nobody", REFUND) is None


def test_an_answer_records_the_verified_approver_and_outlives_the_cycle(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    save(store, "s1", asked(REFUND), asked(OTHER))
    asked_at = entry(store, "s1", REFUND).asked_at

    save(store, "s1", answered(REFUND, by="ana", comment="fine"), answered(OTHER, approved=False))

    approved = entry(reopen(), "s1", REFUND)
    assert approved.status == "approved"
    assert approved.answered_by == "ana"
    assert approved.roles == ("manager",)
    assert approved.via == "authenticator"
    assert approved.comment == "fine"
    assert approved.answered_at == utc("2026-05-01T10:00:00+00:00")
    assert approved.asked_at == asked_at
    assert entry(store, "s1", OTHER).status == "denied"
    assert store.approvals().entries == []
    # The cycle ends: the interrupts leave the state, the entries stay as they were.
    save(store, "s1")
    assert entry(store, "s1", REFUND) == approved
    assert {e.interrupt_id for e in store.approvals(status="answered").entries} == {
        REFUND,
        OTHER,
    }


def test_an_answer_is_final_in_the_ledger(store: SessionStore) -> None:
    save(store, "s1", answered(REFUND, by="ana"))
    # A state that says otherwise later (hand-edited) does not rewrite the audit.
    save(store, "s1", answered(REFUND, approved=False, by="mallory"))
    save(store, "s1", asked(REFUND))
    kept = entry(store, "s1", REFUND)
    assert (kept.status, kept.answered_by) == ("approved", "ana")


def test_a_timeout_record_lapses_the_approval(store: SessionStore) -> None:
    save(store, "s1", asked(REFUND))
    save(store, "s1", timed_out(REFUND, at="2026-05-01T11:00:00+00:00"))

    lapsed = entry(store, "s1", REFUND)
    assert lapsed.status == "lapsed"
    assert lapsed.answered_by is None
    assert lapsed.answered_at == utc("2026-05-01T11:00:00+00:00")


def test_a_pending_approval_that_leaves_the_state_lapses(store: SessionStore) -> None:
    """Its cycle was abandoned: nobody can answer it any more, so it is not pending."""
    save(store, "s1", asked(REFUND))
    save(store, "s2", asked(OTHER))
    before = datetime.now(UTC)

    save(store, "s1")

    lapsed = entry(store, "s1", REFUND)
    assert lapsed.status == "lapsed"
    assert lapsed.answered_by is None
    assert lapsed.answered_at is not None
    assert lapsed.answered_at >= before - timedelta(seconds=5)
    assert [e.session_id for e in store.approvals().entries] == ["s2"]
    # Asked again later under the same id (a hand-made state): the audit stays.
    save(store, "s1", asked(REFUND))
    assert entry(store, "s1", REFUND).status == "lapsed"


def test_a_session_without_policy_interrupts_has_no_entries(store: SessionStore) -> None:
    plain = {"id": "v1:tool_call:t1:x", "name": "approve", "reason": None, "response": None}
    save(store, "s1", plain)
    save(store, "s1")
    assert store.approvals(status=None).entries == []
    assert store.approvals(status=None).total == 0


def test_delete_removes_the_session_entries(store: SessionStore) -> None:
    save(store, "s1", asked(REFUND))
    save(store, "s2", answered(REFUND))

    store.delete("s1")

    assert store.approval("s1", REFUND) is None
    assert [e.session_id for e in store.approvals(status=None).entries] == ["s2"]


def test_filters_and_totals(store: SessionStore) -> None:
    save(store, "s1", asked(REFUND), asked(approval_id("t9", hook="model.before", middleware="m")))
    time.sleep(0.01)
    cut = datetime.now(UTC)
    time.sleep(0.01)
    save(store, "s2", asked(REFUND), answered(OTHER))

    def ids(**filters: object) -> list[tuple[str, str]]:
        page = store.approvals(**filters)  # type: ignore[arg-type]
        assert page.total == len(page.entries)
        return [(e.session_id, e.hook) for e in page.entries]

    # One save's entries share their asked_at, then go by interrupt id.
    everything = [("s1", "model.before"), ("s1", "tool.before"), ("s2", "tool.before")]
    assert ids() == everything
    assert ids(hook="model.before") == [("s1", "model.before")]
    assert ids(middleware="refund_guard") == [("s1", "tool.before"), ("s2", "tool.before")]
    assert ids(session_id="s2") == [("s2", "tool.before")]
    assert ids(asked_before=cut) == everything[:2]
    assert ids(asked_before=cut, hook="tool.before") == [("s1", "tool.before")]
    assert ids(status="approved") == [("s2", "tool.before")]
    assert ids(status="denied") == []
    assert ids(status="answered", session_id="s1") == []
    assert len(ids(status=None)) == 4


def test_pages_follow_each_other_without_repeats_or_gaps(store: SessionStore) -> None:
    for number in range(7):
        save(store, f"s{number}", asked(REFUND))
    seen: list[str] = []

    first = store.approvals(limit=3)
    assert (len(first.entries), first.total) == (3, 7)
    seen += [e.session_id for e in first.entries]
    # Approvals asked between two pages come after the ones already listed.
    save(store, "s7", asked(REFUND))
    save(store, "s8", asked(REFUND))
    after = first.next_cursor
    while after is not None:
        page = store.approvals(limit=3, after=after)
        seen += [e.session_id for e in page.entries]
        after = page.next_cursor

    assert seen == [f"s{number}" for number in range(9)]
    assert store.approvals(limit=9).next_cursor is None


def test_answered_pages_run_newest_answer_first(store: SessionStore) -> None:
    for number in range(5):
        save(store, f"s{number}", answered(REFUND, at=f"2026-05-0{number + 1}T10:00:00+00:00"))

    first = store.approvals(status="answered", limit=2)
    assert [e.session_id for e in first.entries] == ["s4", "s3"]
    second = store.approvals(status="answered", limit=2, after=first.next_cursor)
    assert [e.session_id for e in second.entries] == ["s2", "s1"]
    last = store.approvals(status="answered", limit=2, after=second.next_cursor)
    assert ([e.session_id for e in last.entries], last.next_cursor, last.total) == (["s0"], None, 5)
    newest = store.approvals(status=None, limit=5)
    assert [e.session_id for e in newest.entries] == ["s4", "s3", "s2", "s1", "s0"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"limit": 0}, "limit must be an int from 1 to 500, got 0"),
        ({"limit": 501}, "limit must be an int from 1 to 500, got 501"),
        ({"limit": True}, "limit must be an int from 1 to 500, got True"),
        ({"status": "open"}, "status must be one of pending, approved, denied, lapsed"),
        ({"hook": ""}, "hook must be a non-empty str or None"),
        ({"asked_before": datetime(2026, 1, 1)}, "asked_before must be a timezone-aware"),
        ({"after": "not a cursor!"}, "is not a cursor of this listing (it does not decode)"),
        ({"after": 7}, "is not a cursor of this listing (a int, not a str)"),
    ],
)
def test_a_bad_listing_is_refused_with_what_is_wrong(
    store: SessionStore, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(SessionError, match=r"^cannot list approvals: ") as raised:
        store.approvals(**arguments)  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_a_cursor_of_another_listing_is_refused(store: SessionStore) -> None:
    for number in range(3):
        save(store, f"s{number}", asked(REFUND))
    cursor = store.approvals(limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(SessionError, match="ordered by 'asked', this one is ordered by 'answered'"):
        store.approvals(status="answered", after=cursor)
    forged = base64.urlsafe_b64encode(json.dumps(["asked", "yesterday", "a", "b"]).encode())
    with pytest.raises(SessionError, match="its time does not decode"):
        store.approvals(after=forged.decode())


def test_the_stores_read_ids_and_records_as_the_policy_layer_writes_them() -> None:
    """The sessions layer may not import the policy layer: its own reading must agree."""
    for identifier in (
        REFUND,
        approval_id("turn-3", hook="model.before", middleware="budget"),
        approval_id("call:with:colons"),
        "v2:policy:tool.before:m:t1#short",
        "v2:policy:tool.before:t1#0123456789abcdef",
        "v1:policy:tool.before:m:t1",
        "v2:policy:",
    ):
        parsed = parse_interrupt_id(identifier)
        expected = None if parsed is None else (parsed.hook, parsed.middleware)
        assert parse_policy_id(identifier) == expected, identifier
    [yes, no, late] = observe(
        {
            "interrupts": [
                answered(REFUND, roles=("a", "b")),
                answered(OTHER, approved=False),
                timed_out(approval_id("t3")),
            ]
        }
    )
    assert (yes.status, yes.answered_by, json.loads(yes.roles), yes.via) == (
        "approved",
        "ana",
        ["a", "b"],
        "authenticator",
    )
    assert no.status == "denied"
    assert late.status == "lapsed"


def test_a_record_for_another_step_or_not_a_real_bool_is_no_answer() -> None:
    """Only a record bound to the id's fingerprint, with ``approved`` a real bool, is an
    answer: the ledger and the policy layer's ``read_record`` agree."""
    wrong_step = answered(REFUND)
    wrong_step["response"]["fingerprint"] = "x"
    no_fingerprint = answered(OTHER)
    del no_fingerprint["response"]["fingerprint"]
    late_elsewhere = timed_out(approval_id("t3"))
    late_elsewhere["response"]["fingerprint"] = "0" * 64
    text_false = answered(approval_id("t4"))
    text_false["response"]["approved"] = "false"
    observed = observe({"interrupts": [wrong_step, no_fingerprint, late_elsewhere, text_false]})
    assert [(o.status, o.answered_by) for o in observed] == [("pending", None)] * 4
    assert read_record(text_false["response"]) is None
    assert read_record(answered(REFUND, approved=False)["response"]) is not None
