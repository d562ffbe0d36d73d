"""Every message is saved as it enters the history, each save one conditional write.

In one process, on a memory store that records each save: which messages it brings,
which results of the stored round it holds, and whether it keeps the lease. The crash
guarantee itself is tested with real processes in ``test_crash_points``.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest

from stageware import (
    AfterToolCallEvent,
    Agent,
    BeforeToolCallEvent,
    MemorySessionStore,
    Message,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    SessionUnfinishedError,
    tool,
)
from stageware._host._interrupt_state import InterruptState
from stageware._host.sessions import SNAPSHOT_VERSION
from tests.host.agent_helpers import calls
from tests.readme import first_block

from .stores import DelegatingStore

SESSION = "checkpoints"


class RecordingStore(DelegatingStore):
    """A memory store that notes what each save brings."""

    def __init__(self) -> None:
        super().__init__(MemorySessionStore())
        self.saves: list[tuple[int, list[str], list[str], int, bool]] = []

    def saved(
        self, snapshot: SessionSnapshot, *, lease_seconds: float | None, kept_messages: int
    ) -> None:
        pending = snapshot["interrupt_state"]["pending_tool_execution"]
        held = snapshot["interrupt_state"]["pending_input"]
        self.saves.append(
            (
                kept_messages,
                [_describe(message) for message in snapshot["messages"]],
                [] if pending is None else sorted(pending["completed"]),
                0 if held is None else len(held["messages"]),
                lease_seconds is not None,
            )
        )


def _describe(message: Any) -> str:
    kinds = [next(iter(block)) for block in message["content"]]
    return f"{message['role']}:{','.join(kinds)}"


def two_calls() -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ScriptedToolCall("fast", {}, id="t1"),
            ScriptedToolCall("slow", {}, id="t2"),
        ]
    )


@pytest.mark.no_journal
def test_each_message_is_saved_as_it_enters_the_history() -> None:
    store = RecordingStore()
    slow_may_finish = threading.Event()

    @tool
    def fast() -> str:
        """Answer at once."""
        return "fast"

    @tool
    def slow() -> str:
        """Answer once the fast call's result is saved."""
        slow_may_finish.wait(10)
        return "slow"

    def after(event: AfterToolCallEvent) -> None:
        if event.tool_use["toolUseId"] == "t1":
            # The fast call's record is saved right after this hook; let the slow one go.
            threading.Timer(0.2, slow_may_finish.set).start()

    agent = Agent(
        ScriptedModel([two_calls(), "done"]),
        tools=[fast, slow],
        session_store=cast("SessionStore", store),
        session_id=SESSION,
    )
    agent.add_hook(after, AfterToolCallEvent)
    agent("go")

    assert store.saves == [
        (0, [], [], 1, True),  # the claim, holding the prompt back for the pass
        # The model turn, after the prompt it answers, with its round stored.
        (0, ["user:text", "assistant:toolUse,toolUse"], [], 0, True),
        (2, [], ["t1"], 0, True),  # each result as its call finishes
        (2, [], ["t1", "t2"], 0, True),
        (2, ["user:toolResult,toolResult", "assistant:text"], [], 0, True),  # the answer
        (4, [], [], 0, False),  # the release
    ]


def test_an_ordinary_round_that_fails_is_not_kept_for_replay() -> None:
    store = RecordingStore()

    @tool
    def fast() -> str:
        """Answer at once."""
        return "fast"

    @tool
    def slow() -> str:
        """Answer at once."""
        return "slow"

    def fail(event: AfterToolCallEvent) -> None:
        if event.tool_use["toolUseId"] == "t2":
            raise RuntimeError("the hook failed")

    agent = Agent(
        ScriptedModel([two_calls(), "after the failure"]),
        tools=[fast, slow],
        session_store=cast("SessionStore", store),
        session_id=SESSION,
    )
    agent.add_hook(fail, AfterToolCallEvent)
    with pytest.raises(RuntimeError, match="the hook failed"):
        agent("go")
    stored = store.load(SESSION)
    assert stored is not None
    assert stored.lease is None
    assert stored.snapshot["interrupt_state"]["pending_tool_execution"] is None

    # As before: the next prompt answers the calls left without results, in order.
    later = Agent(ScriptedModel(["after"]), session_store=store.inner, session_id=SESSION)
    assert later("again").text == "after"
    assert [_describe(m) for m in later.messages] == [
        "user:text",
        "assistant:toolUse,toolUse",
        "user:toolResult,toolResult,text",
        "assistant:text",
    ]


def test_a_checkpoint_that_reaches_the_lock_late_does_not_undo_a_later_one() -> None:
    """Concurrent calls' checkpoints race to the session's lock: the older one is dropped.

    Driven through the session's write directly, in the order a lost race gives.
    """
    store = MemorySessionStore()
    agent = Agent(ScriptedModel(["done"]), session_store=store, session_id=SESSION)
    agent("go")
    session = agent._core.session  # pyright: ignore[reportPrivateUsage]
    assert session is not None
    stored = store.load(SESSION)
    assert stored is not None
    base = session._stored  # pyright: ignore[reportPrivateUsage]
    live = session._sources  # pyright: ignore[reportPrivateUsage]
    taken = session._taken  # pyright: ignore[reportPrivateUsage]

    def checkpoint(step: int, number: int) -> None:
        snapshot: SessionSnapshot = {**stored.snapshot, "messages": [], "state": {"step": step}}
        session._write(snapshot, number, base, len(base), 30.0, None, live)  # pyright: ignore[reportPrivateUsage]

    checkpoint(2, taken + 2)  # the later snapshot reaches the lock first
    checkpoint(1, taken + 1)

    after = store.load(SESSION)
    assert after is not None
    assert (after.version, after.snapshot["state"]) == (stored.version + 1, {"step": 2})


def readme_retry_example() -> str:
    return first_block("## Sessions across workers\n")


def test_the_readme_retry_example_continues_the_run_instead_of_adding_the_turn() -> None:
    store = MemorySessionStore()
    prompt: Message = {"role": "user", "content": [{"text": "refund order 7"}]}
    # What a worker killed right after its claim leaves: the prompt held back for the
    # pass, and its lease.
    held = InterruptState()
    held.pending_input = [prompt]
    store.save(
        SESSION,
        {
            "version": SNAPSHOT_VERSION,
            "messages": [],
            "state": {},
            "model_state": {},
            "interrupt_state": held.to_dict(),
        },
        expected_version=0,
        owner="dead-worker",
        lease_seconds=0.0,
    )
    namespace: dict[str, Any] = {}
    exec(readme_retry_example(), namespace)
    agent = Agent(ScriptedModel(["Refunded."]), session_store=store, session_id=SESSION)

    result = namespace["serve"](agent, "refund order 7")

    assert result.text == "Refunded."
    assert agent.messages == [
        prompt,
        {"role": "assistant", "content": [{"text": "Refunded."}]},
    ]
    stored = store.load(SESSION)
    assert stored is not None
    assert stored.lease is None

    # Finished, the session takes a prompt as a new turn again.
    later = Agent(ScriptedModel(["You are welcome."]), session_store=store, session_id=SESSION)
    assert namespace["serve"](later, "thanks").text == "You are welcome."
    assert len(later.messages) == 4


@tool
def pay(amount: int) -> str:
    """Pay.

    Args:
        amount: The amount.
    """
    return f"paid {amount}"


def _ask_before_paying(event: BeforeToolCallEvent) -> None:
    if event.interrupt("approve-pay", reason="needs approval") != "yes":
        event.cancel_tool = "denied"


def _paying_agent(store: SessionStore, *turns: ScriptedTurn | str) -> Agent:
    agent = Agent(ScriptedModel(list(turns)), tools=[pay], session_store=store, session_id=SESSION)
    agent.add_hook(_ask_before_paying, BeforeToolCallEvent)
    return agent


def _crash_during_resume(store: MemorySessionStore, *, lease_seconds: float) -> None:
    """Leave what a worker killed inside a resumed interrupt's tool call leaves.

    The answer it resumed with is stored (the claim saved it), and so is its lease.
    """
    first = _paying_agent(store, ScriptedTurn(tool_calls=[ScriptedToolCall("pay", {"amount": 9})]))
    assert first("pay 9").stop_reason == "interrupt"
    stored = store.load(SESSION)
    assert stored is not None
    interrupts = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    (waiting,) = interrupts.pending()
    interrupts.resume([(waiting.id, "yes")])
    store.save(
        SESSION,
        {**stored.snapshot, "interrupt_state": interrupts.to_dict()},
        expected_version=stored.version,
        owner="dead-worker",
        lease_seconds=lease_seconds,
    )


def test_a_prompt_after_a_crash_in_a_resumed_interrupt_is_refused_as_unfinished() -> None:
    store = MemorySessionStore()
    _crash_during_resume(store, lease_seconds=0.0)
    agent = _paying_agent(store, "Paid.", "You are welcome.")
    before = store.load(SESSION)
    assert before is not None

    with pytest.raises(SessionUnfinishedError) as raised:
        agent("hello?")

    assert raised.value.session_id == SESSION
    after = store.load(SESSION)
    assert after is not None
    assert after.version == before.version
    # The sessions guide's retry pattern: continuing runs the approved call, then the turn ends.
    result = agent()
    assert result.text == "Paid."
    (paid,) = agent.messages[-2]["content"]
    assert "toolResult" in paid
    assert paid["toolResult"]["content"] == [{"text": "paid 9"}]
    assert agent("thanks").stop_reason == "end_turn"


def test_a_prompt_while_the_crashed_resume_still_holds_its_lease_is_refused_as_leased() -> None:
    store = MemorySessionStore()
    _crash_during_resume(store, lease_seconds=30.0)
    agent = _paying_agent(store, "Paid.")

    with pytest.raises(SessionLeasedError) as raised:
        agent("hello?")

    assert raised.value.lease.owner == "dead-worker"


@pytest.mark.parametrize("edit", ["replaced", "in place"])
@pytest.mark.no_journal
def test_an_earlier_message_changed_during_the_run_is_saved(edit: str) -> None:
    """A checkpoint finds a replaced message by identity and saves from it on; a change
    made in place inside a stored message is saved by the final save, which compares
    every message."""
    store = RecordingStore()

    @tool
    def fast() -> str:
        """Answer at once."""
        return "fast"

    def redact(event: AfterToolCallEvent) -> None:
        if edit == "replaced":
            agent.messages[0] = {"role": "user", "content": [{"text": "[redacted]"}]}
        else:
            agent.messages[0]["content"][0] = {"text": "[redacted]"}

    agent = Agent(
        ScriptedModel([calls(("fast", {}, "t1")), "done"]),
        tools=[fast],
        session_store=cast("SessionStore", store),
        session_id=SESSION,
    )
    agent.add_hook(redact, AfterToolCallEvent)
    agent("go")

    result_record = store.saves[2]
    if edit == "replaced":
        # The result's checkpoint rewrites the history from the replaced message.
        assert result_record == (0, ["user:text", "assistant:toolUse"], ["t1"], 0, True)
    else:
        assert result_record == (2, [], ["t1"], 0, True)
        # The release brings the history from the edited message.
        assert store.saves[-1][0] == 0
    stored = store.inner.load(SESSION)
    assert stored is not None
    assert stored.snapshot["messages"][0]["content"] == [{"text": "[redacted]"}]
    assert stored.snapshot["messages"] == agent.messages
