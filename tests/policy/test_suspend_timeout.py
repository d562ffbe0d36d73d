"""A ``Suspend`` with a timeout: the deadline in the interrupt, and what a late run does.

Real agent runs with a policy whose middleware suspends refunds, on SQLite and Postgres
(``shared_spec``). Deadlines are short and real: each test waits until the stored deadline
has passed rather than move a clock.
"""

from __future__ import annotations

import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from stageware import Agent, SessionStore
from stageware.policy import (
    ApprovalRefused,
    Block,
    Escalate,
    PolicyEnv,
    Suspend,
    ToolCallEvent,
    middleware,
)
from stageware_codegen.cli import main
from tests.host.agent_helpers import calls
from tests.host.sessions.stores import StoreSpec, close_store, open_store
from tests.policy.approvers import answer
from tests.policy.policy_helpers import Ledger, refund_agent

SESSION = "late-refund"


def guard(timeout: Any, on_timeout: Block | Escalate | None = None) -> Any:
    @middleware(hooks=["tool.before"], fail_mode="closed", name="refund_guard")
    async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend:
        return Suspend("a refund needs a manager", timeout=timeout, on_timeout=on_timeout)

    return refund_guard


@pytest.fixture
def store(shared_spec: StoreSpec) -> Any:
    opened = open_store(shared_spec)
    yield opened
    close_store(opened)


def suspended(
    store: SessionStore, timeout: Any, on_timeout: Block | Escalate | None = None
) -> tuple[Agent, Ledger, dict[str, Any]]:
    """A refund run suspended by a guard with *timeout*; the agent, its ledger, the reason."""
    script = [calls(("refund", {"amount": 900}, "t1")), "Refunded."]
    agent, ledger, _ = refund_agent(
        guard(timeout, on_timeout), script=script, store=store, session_id=SESSION
    )
    result = agent("refund 900")
    assert result.stop_reason == "interrupt"
    [interrupt] = result.interrupts
    return agent, ledger, cast(dict[str, Any], interrupt.reason)


def past(reason: dict[str, Any]) -> None:
    """Sleep until the deadline *reason* carries has passed."""
    left = (datetime.fromisoformat(reason["deadline"]) - datetime.now(UTC)).total_seconds()
    time.sleep(max(0.0, left) + 0.05)


def where(spec: StoreSpec) -> list[str]:
    """The command line's arguments naming *spec*'s store."""
    if spec.kind == "sqlite":
        return ["--store", f"sqlite:///{spec.target}"]
    return ["--store", spec.target, "--schema", spec.schema]


def test_the_timeout_is_read_as_the_policy_layer_reads_durations() -> None:
    assert Suspend("x", timeout="2h").timeout == timedelta(hours=2)
    assert Suspend("x", timeout="P2D").timeout == timedelta(days=2)
    assert Suspend("x", timeout=90).timeout == timedelta(seconds=90)
    assert Suspend("x").timeout is None
    with pytest.raises(ValueError, match=r"Suspend\.timeout: cannot read 'soon'"):
        Suspend("x", timeout="soon")
    with pytest.raises(ValueError, match=r"Suspend\.timeout: a timeout must be a positive"):
        Suspend("x", timeout=0)
    with pytest.raises(TypeError, match="must be a Block or an Escalate"):
        Suspend("x", timeout="1h", on_timeout=Suspend("y"))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="on_timeout is given without a timeout"):
        Suspend("x", on_timeout=Block("late"))


def test_the_deadline_is_in_the_interrupt_for_the_approver(store: SessionStore) -> None:
    before = datetime.now(UTC)
    _, _, reason = suspended(store, "2h", Escalate("nobody approved", queue="refunds"))

    deadline = datetime.fromisoformat(reason["deadline"])
    assert before + timedelta(hours=2) <= deadline <= datetime.now(UTC) + timedelta(hours=2)
    assert reason["on_timeout"] == {
        "outcome": "escalate",
        "reason": "nobody approved",
        "queue": "refunds",
    }


def test_continuing_before_the_deadline_with_nothing_answered_raises_as_before(
    store: SessionStore,
) -> None:
    agent, ledger, _ = suspended(store, "1h")
    with pytest.raises(TypeError, match="must be resumed"):
        agent()
    assert ledger.payouts == []


def test_a_run_continued_after_the_deadline_blocks_the_step_by_default(
    store: SessionStore,
) -> None:
    agent, ledger, reason = suspended(store, "300ms")
    past(reason)

    result = agent()

    assert cast(str, result.stop_reason) == "blocked"
    assert ledger.payouts == []
    assert result.halt is not None
    assert result.halt.reason == (
        f"approval timed out: nobody answered 'a refund needs a manager' by {reason['deadline']}"
    )
    [decision] = [d for d in result.decisions if d.middleware == "refund_guard"]
    assert (decision.outcome, decision.approver) == ("block", None)
    assert decision.notes[0].endswith(f"timed out at {reason['deadline']} (block)")


def test_a_timeout_declared_as_escalate_escalates_the_run(store: SessionStore) -> None:
    agent, ledger, reason = suspended(
        store, "300ms", Escalate("refund approval expired", queue="refunds")
    )
    past(reason)

    result = agent()

    assert cast(str, result.stop_reason) == "escalated"
    assert ledger.payouts == []
    [escalation] = store.escalations()
    assert (escalation.session_id, escalation.queue, escalation.reason) == (
        SESSION,
        "refunds",
        "refund approval expired",
    )
    assert escalation.middleware == "refund_guard"


def test_an_answer_after_the_deadline_is_refused_and_changes_nothing(
    store: SessionStore,
) -> None:
    agent, ledger, reason = suspended(store, "300ms")
    [interrupt] = agent.pending_interrupts
    past(reason)

    with pytest.raises(ApprovalRefused, match=r"could be answered until .* nothing was recorded"):
        agent(answer(interrupt.id, True))
    stored = store.load(SESSION)
    assert stored is not None
    [kept] = stored.snapshot["interrupt_state"]["interrupts"]
    assert kept["response"] is None

    # The step is resolved as the policy declared: blocked, never paid.
    assert cast(str, agent().stop_reason) == "blocked"
    assert ledger.payouts == []


def test_an_answer_in_time_stands_after_the_deadline_and_is_used_once(
    store: SessionStore,
    shared_spec: StoreSpec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent, ledger, reason = suspended(store, "1s")
    [interrupt] = agent.pending_interrupts
    monkeypatch.delenv("STAGEWARE_APPROVAL_AUTHENTICATOR", raising=False)
    # Recorded in time from the command line; the worker continues after the deadline.
    assert main(["policy", "approvals", *where(shared_spec), "--approve", interrupt.id]) == 0
    capsys.readouterr()
    past(reason)
    # A worker that loads the session now (the suspending one holds a stale copy).
    script = [calls(("refund", {"amount": 900}, "t1")), "Refunded."]
    agent, _, _ = refund_agent(
        guard("1s"), script=script[1:], ledger=ledger, store=store, session_id=SESSION
    )

    result = agent()

    assert result.text == "Refunded."
    assert ledger.payouts == [900]
    # The cycle is over: a second use of the same answer finds nothing waiting.
    with pytest.raises(RuntimeError, match="not waiting for any"):
        agent(answer(interrupt.id, True))
    assert ledger.payouts == [900]


def test_asking_again_keeps_the_first_deadline(store: SessionStore) -> None:
    """Two refunds in one round: answering one leaves the other waiting, with its deadline
    counted from when it first suspended."""
    script = [
        calls(("refund", {"amount": 900}, "t1"), ("refund", {"amount": 800}, "t2")),
        "Done.",
    ]
    agent, ledger, _ = refund_agent(guard("2s"), script=script, store=store, session_id=SESSION)
    first = agent("refund both")
    deadlines = {i.id: cast(dict[str, Any], i.reason)["deadline"] for i in first.interrupts}
    one, other = sorted(deadlines)
    time.sleep(0.05)

    again = agent(answer(one, True))

    assert again.stop_reason == "interrupt"
    [waiting] = again.interrupts
    assert waiting.id == other
    assert cast(dict[str, Any], waiting.reason)["deadline"] == deadlines[other]
    past(cast(dict[str, Any], waiting.reason))
    result = agent()
    assert cast(str, result.stop_reason) == "blocked"
    # The answered refund ran once; the other, past its deadline, was blocked.
    assert ledger.payouts == [900 if ":t1#" in one else 800]


def test_the_command_line_lists_the_deadline_and_refuses_a_late_answer(
    store: SessionStore,
    shared_spec: StoreSpec,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent, ledger, reason = suspended(store, "1s", Escalate("expired", queue="refunds"))
    [interrupt] = agent.pending_interrupts
    for name in ("STAGEWARE_APPROVAL_AUTHENTICATOR", "STAGEWARE_APPROVAL_CREDENTIAL"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()

    assert main(["policy", "approvals", *where(shared_spec)]) == 0
    listed = capsys.readouterr().out
    assert f"{reason['deadline']} then escalate" in listed
    assert main(["policy", "approvals", *where(shared_spec), "--show", interrupt.id]) == 0
    assert f"  deadline: {reason['deadline']} then escalate" in capsys.readouterr().out

    past(reason)
    assert main(["policy", "approvals", *where(shared_spec), "--approve", interrupt.id]) == 2
    err = capsys.readouterr().err
    assert "could be answered until" in err
    assert "resolved as the policy declared for a timeout (escalate)" in err
    assert cast(str, agent().stop_reason) == "escalated"
    assert ledger.payouts == []


def test_the_readme_deadline_example_runs_as_written(store: SessionStore) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Approvals: who may answer\n") :]
    block = section[section.index("- **Deadlines.**") :].split("```python\n", 1)[1]
    code = textwrap.dedent(block.split("```", 1)[0])
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    script = [calls(("refund", {"amount": 900}, "t1")), "Refunded."]
    agent, ledger, _ = refund_agent(
        namespace["refund_approval"], script=script, store=store, session_id=SESSION
    )

    before = datetime.now(UTC)
    [interrupt] = agent("refund 900").interrupts

    reason = cast(dict[str, Any], interrupt.reason)
    assert reason["approvers"] == ["role:finance"]
    deadline = datetime.fromisoformat(reason["deadline"])
    assert before + timedelta(hours=4) <= deadline <= datetime.now(UTC) + timedelta(hours=4)
    assert reason["on_timeout"] == {
        "outcome": "escalate",
        "reason": "no finance approver within 4 hours",
        "queue": "refunds",
    }
    assert ledger.payouts == []
