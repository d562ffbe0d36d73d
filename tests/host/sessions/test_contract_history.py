"""Append-only histories, as every store keeps them: a save brings only the messages after
the ones it keeps, and a load returns the whole history exactly.

Checked on memory, SQLite and Postgres alike: appends, a tail rewritten from an earlier
message (a repair), a shortened and a replaced history, and that a refused save (a
conflict, a lease, an escalation, a count the store does not hold) writes no message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from stageware._generated.payloads import Message
from stageware._host.sessions import (
    Escalation,
    SessionConflictError,
    SessionError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    StoredSession,
)

from .stores import make_snapshot, run_threads


def text(role: str, words: str) -> Message:
    return cast(Message, {"role": role, "content": [{"text": words}]})


def turn(index: int) -> list[Message]:
    """One turn of four messages: a question, a tool call, its result, the answer."""
    call: Any = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": f"t{index}", "name": "find", "input": {}}}],
    }
    result: Any = {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": f"t{index}",
                    "status": "success",
                    # Text the databases find awkward, as in make_snapshot.
                    "content": [{"text": f"result {index} \ud800 a\x00b é " + "x" * 2000}],
                }
            }
        ],
    }
    return [text("user", f"question {index}"), call, result, text("assistant", f"answer {index}")]


def with_messages(messages: list[Message], state: int = 0) -> SessionSnapshot:
    return {**make_snapshot(state), "messages": messages}


def save(
    store: SessionStore,
    messages: list[Message],
    version: int,
    *,
    kept: int = 0,
    state: int = 0,
    owner: str = "worker-a",
    lease_seconds: float | None = None,
    escalation: Escalation | None = None,
) -> int:
    return store.save(
        "s1",
        with_messages(messages, state),
        expected_version=version,
        owner=owner,
        lease_seconds=lease_seconds,
        escalation=escalation,
        kept_messages=kept,
    )


def history(store: SessionStore) -> list[Message]:
    stored = store.load("s1")
    assert stored is not None
    return stored.snapshot["messages"]


def grown(store: SessionStore, turns: int) -> tuple[list[Message], int]:
    """A session of *turns* turns, each saved as an append; its history and version."""
    messages: list[Message] = []
    version = 0
    for index in range(turns):
        new = turn(index)
        version = save(store, new, version, kept=len(messages), state=index)
        messages += new
    return messages, version


def escalation() -> Escalation:
    return Escalation.new(
        "s1", queue="q", hook="tool.before", middleware="m", reason="r", event={"n": 1}
    )


def test_appended_turns_load_as_the_whole_history(store: SessionStore) -> None:
    messages, version = grown(store, 5)

    assert version == 5
    assert store.load("s1") == StoredSession(with_messages(messages, 4), 5, None)


def test_an_append_of_nothing_keeps_the_history_and_saves_the_rest(store: SessionStore) -> None:
    messages, version = grown(store, 2)

    save(store, [], version, kept=len(messages), state=9)

    assert store.load("s1") == StoredSession(with_messages(messages, 9), version + 1, None)


def test_a_tail_rewritten_from_an_earlier_message_replaces_what_followed(
    store: SessionStore,
) -> None:
    messages, version = grown(store, 3)
    # As a repair does: the last message replaced, and one more after it.
    repaired = [text("user", "merged question"), text("assistant", "answer")]

    save(store, repaired, version, kept=len(messages) - 1)

    assert history(store) == messages[:-1] + repaired
    # And appends go on from there.
    save(store, turn(7), version + 1, kept=len(messages) + 1)
    assert history(store) == messages[:-1] + repaired + turn(7)


def test_a_shortened_history_drops_the_messages_after_the_kept_ones(store: SessionStore) -> None:
    messages, version = grown(store, 3)

    save(store, [], version, kept=5)
    assert history(store) == messages[:5]
    save(store, [], version + 1, kept=0)
    assert history(store) == []
    save(store, turn(8), version + 2, kept=0)
    assert history(store) == turn(8)


def test_a_replaced_history_keeps_nothing_of_the_old_one(store: SessionStore) -> None:
    _, version = grown(store, 3)
    replacement = [text("user", "start over"), text("assistant", "fine")]

    save(store, replacement, version)

    assert history(store) == replacement


def test_a_full_snapshot_saved_without_a_count_replaces_the_history(store: SessionStore) -> None:
    # What a caller unaware of kept_messages does (the approvals command, a test double).
    _, version = grown(store, 2)
    snapshot = make_snapshot(3)

    store.save("s1", snapshot, expected_version=version, owner="w", lease_seconds=None)

    assert store.load("s1") == StoredSession(snapshot, version + 1, None)


def test_a_conflicting_append_is_refused_and_leaves_the_history(store: SessionStore) -> None:
    messages, version = grown(store, 2)
    # Two writers loaded this version; the first saves a repair, the second an append.
    first = [text("user", "first writer")]
    save(store, first, version, kept=len(messages) - 1)

    with pytest.raises(SessionConflictError):
        save(store, turn(9), version, kept=len(messages), state=9)

    assert store.load("s1") == StoredSession(
        with_messages(messages[:-1] + first), version + 1, None
    )


def test_a_leased_session_refuses_an_append_and_writes_nothing(store: SessionStore) -> None:
    messages, version = grown(store, 1)
    version = save(store, [], version, kept=4, owner="holder", lease_seconds=60)

    with pytest.raises(SessionLeasedError):
        save(store, turn(1), version, kept=4, owner="other")

    assert history(store) == messages


def test_keeping_more_messages_than_stored_is_refused_and_writes_nothing(
    store: SessionStore,
) -> None:
    messages, version = grown(store, 1)

    for kept in (5, -1):
        with pytest.raises(SessionError, match="nothing was written") as caught:
            save(store, turn(1), version, kept=kept)
        assert not isinstance(caught.value, SessionConflictError)
    with pytest.raises(SessionError, match="keeps 1 messages of the stored history, which holds 0"):
        store.save(
            "s2",
            make_snapshot(),
            expected_version=0,
            owner="w",
            lease_seconds=None,
            kept_messages=1,
        )

    assert store.load("s1") == StoredSession(with_messages(messages), version, None)
    assert store.load("s2") is None


@pytest.mark.parametrize("kept", [None, "3", 2.0, True])
def test_a_kept_count_that_is_no_count_is_refused_and_writes_nothing(
    store: SessionStore, kept: object
) -> None:
    messages, version = grown(store, 1)

    with pytest.raises(SessionError, match=r"kept_messages must be a count of messages"):
        save(store, turn(1), version, kept=cast(int, kept))

    assert store.load("s1") == StoredSession(with_messages(messages), version, None)


def test_a_refused_append_names_the_bad_message_by_its_place_in_the_history(
    store: SessionStore,
) -> None:
    messages, version = grown(store, 1)  # four messages, so the append starts at [4]
    not_json = turn(1)
    not_json[1]["content"][0]["toolUse"]["input"] = {"pair": (1, 2)}
    wrong_role = [text("robot", "beep")]

    with pytest.raises(SessionError, match=r"messages\[5\]\.content\[0\]\.toolUse\.input\.pair "):
        save(store, not_json, version, kept=len(messages))
    with pytest.raises(SessionError, match=r"field messages\[4\]\.role: "):
        save(store, wrong_role, version, kept=len(messages))
    # A save that keeps fewer counts from where its messages go.
    with pytest.raises(SessionError, match=r"messages\[1\]\.content\[0\]\.toolUse\.input\.pair "):
        save(store, not_json[1:], version, kept=1)

    assert store.load("s1") == StoredSession(with_messages(messages), version, None)


def test_an_escalating_append_writes_its_messages_and_the_escalation_together(
    store: SessionStore,
) -> None:
    messages, version = grown(store, 1)
    recorded = escalation()

    version = save(store, turn(1), version, kept=4, escalation=recorded)
    assert history(store) == messages + turn(1)
    assert store.open_escalation("s1") == recorded

    # A second escalation is refused while the first is open: its messages are not written.
    with pytest.raises(SessionError, match="already waits on escalation"):
        save(store, turn(2), version, kept=8, escalation=escalation())
    assert history(store) == messages + turn(1)


def test_a_deleted_session_created_again_has_only_its_new_messages(store: SessionStore) -> None:
    grown(store, 2)
    store.delete("s1")

    save(store, turn(5), 0)

    assert history(store) == turn(5)


def test_a_loaded_history_is_the_callers_own(store: SessionStore) -> None:
    messages, version = grown(store, 1)
    loaded = history(store)
    loaded[0]["content"].append({"text": "changed by the caller"})
    loaded.append(text("user", "appended by the caller"))

    assert history(store) == messages
    save(store, turn(1), version, kept=4)
    assert history(store) == messages + turn(1)


def test_of_writers_racing_from_one_version_one_appends_and_the_rest_write_nothing(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    messages, version = grown(store, 2)
    stores = [reopen() for _ in range(6)]
    won: list[int] = []

    def write(index: int) -> None:
        # Half append a turn, half rewrite the last message: all from the same version.
        kept = len(messages) - index % 2
        try:
            save(stores[index], turn(10 + index), version, kept=kept, owner=f"w{index}")
        except SessionConflictError:
            return
        won.append(index)

    run_threads(len(stores), write)

    [winner] = won
    kept = len(messages) - winner % 2
    assert store.load("s1") == StoredSession(
        with_messages(messages[:kept] + turn(10 + winner)), version + 1, None
    )
