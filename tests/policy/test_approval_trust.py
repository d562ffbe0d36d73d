"""Approvals under attack, on SQLite and PostgreSQL: an answer is final, bound to the step it
was given for, and given by someone who may give it.

Each test runs a real agent with a policy on a session store, and answers the way an
attacker or an unlucky operator would: through the command line (``main([...])``, as the
console script runs it) and through a resume prompt. What must not happen is counted on
the tool: a refund or a wire that ran.
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from stageware import (
    Agent,
    InterruptAnsweredError,
    ScriptedModel,
    SessionSnapshot,
    SessionStore,
    StreamAssemblyError,
    tool,
)
from stageware._cli._operator import AUTHENTICATOR_VARIABLE, CREDENTIAL_VARIABLE
from stageware.policy import (
    ApprovalRefused,
    Continue,
    InputEvent,
    PolicyEngine,
    PolicyEnv,
    SignedCredentials,
    Suspend,
    ToolCallEvent,
    middleware,
)
from stageware_codegen.cli import main
from tests.host.agent_helpers import calls
from tests.host.sessions.stores import StoreSpec, close_store, open_store
from tests.telemetry.tracing_helpers import Recorder, attributes

from .approvers import FACTORY, SECRET, authenticator, credential, signed
from .policy_helpers import Ledger

SESSION = "customer-9"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Refunds over 100 wait for a person."""
    if event.input.get("amount", 0) > 100:
        return Suspend(f"refund of {event.input['amount']}")
    return None


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def finance_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Refunds over 100 wait for someone in finance."""
    if event.input.get("amount", 0) > 100:
        return Suspend(f"refund of {event.input['amount']}", approvers=["role:finance"])
    return None


@middleware(hooks=["input.received"], fail_mode="closed", timeout="2s")
async def wire_guard(event: InputEvent, env: PolicyEnv) -> Suspend | None:
    """A request that mentions a wire transfer waits for a person."""
    if "wire" in json.dumps(event.messages):
        return Suspend("a wire transfer was requested")
    return None


class Desk:
    """The tools, counting what ran, and agents on one session of the store."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.paid: list[int] = []
        self.snapshots: list[SessionSnapshot] = []

        @tool
        def refund(amount: int) -> str:
            """Refund an amount."""
            self.paid.append(amount)
            # What the session holds while the approved step runs: the answer is in it.
            stored = store.load(SESSION)
            assert stored is not None
            self.snapshots.append(stored.snapshot)
            return "refunded"

        self.refund = refund

    def agent(
        self,
        script: Sequence[Any],
        *guards: Any,
        authenticator: Callable[[str], Any] | None = None,
    ) -> Agent:
        return Agent(
            ScriptedModel(list(script)),
            tools=[self.refund],
            policy=PolicyEngine(list(guards) or [refund_guard], authenticator=authenticator),
            session_store=self.store,
            session_id=SESSION,
        )


def resume(interrupt_id: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": answer}}]


def approve(who: str, *, roles: Sequence[str] = (), approved: bool = True) -> dict[str, Any]:
    return {"approved": approved, "credential": credential(who, roles)}


@pytest.fixture
def store(shared_spec: StoreSpec) -> Iterator[SessionStore]:
    opened = open_store(shared_spec)
    yield opened
    close_store(opened)


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    shared_spec: StoreSpec, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Cli:
    """``cli(*arguments, by=None, roles=())``: ``stageware policy approvals`` as the OS
    account, or as *by* verified by the tests' authenticator."""
    where = (
        ["--store", f"sqlite:///{shared_spec.target}"]
        if shared_spec.kind == "sqlite"
        else ["--store", shared_spec.target, "--schema", shared_spec.schema]
    )

    def run(
        *arguments: str, by: str | None = None, roles: Sequence[str] = ()
    ) -> tuple[int, str, str]:
        capsys.readouterr()
        with monkeypatch.context() as env:
            env.delenv(AUTHENTICATOR_VARIABLE, raising=False)
            env.delenv(CREDENTIAL_VARIABLE, raising=False)
            if by is not None:
                env.setenv(AUTHENTICATOR_VARIABLE, FACTORY)
                env.setenv(CREDENTIAL_VARIABLE, credential(by, roles))
            status = main(["policy", "approvals", *where, *arguments])
        out, err = capsys.readouterr()
        return status, out, err

    return run


def suspended(desk: Desk, amount: int = 500, call_id: str = "call_0", **options: Any) -> str:
    """Ask for a refund of *amount* the guard suspends; the interrupt id."""
    agent = desk.agent([calls(("refund", {"amount": amount}, call_id))], **options)
    result = agent(f"refund {amount}")
    assert result.stop_reason == "interrupt"
    [interrupt] = result.interrupts
    return interrupt.id


# --- final ---------------------------------------------------------------------------------


def test_a_resume_cannot_approve_what_the_command_line_denied(
    store: SessionStore, cli: Cli
) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    assert cli("--deny", waiting, by="ana")[0] == 0

    agent = desk.agent(["never"], authenticator=authenticator())
    with pytest.raises(InterruptAnsweredError) as refused:
        agent(resume(waiting, approve("mallory")))

    message = str(refused.value)
    assert f"interrupt {waiting!r} was already denied by ana (authenticator) at " in message
    assert "an answer is final" in message
    assert desk.paid == []
    # The denial stands: the run continues blocked, and the refund never runs.
    assert str(agent().stop_reason) == "blocked"
    assert desk.paid == []


def test_a_resume_cannot_deny_what_the_command_line_approved(store: SessionStore, cli: Cli) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    status, out, _ = cli("--approve", waiting, by="ana")
    assert status == 0
    # The same answer again is no new answer: nothing is written.
    status, out, _ = cli("--approve", waiting, by="bo")
    assert (status, out.endswith("the first answer stands and nothing was written\n")) == (0, True)
    status, _, err = cli("--deny", waiting, by="bo")
    assert status == 2
    assert "was already approved by ana (authenticator) at" in err

    agent = desk.agent(["Refunded."], authenticator=authenticator())
    with pytest.raises(InterruptAnsweredError, match="already approved by ana"):
        agent(resume(waiting, approve("bo", approved=False)))
    assert desk.paid == []

    result = agent()
    assert result.text == "Refunded."
    assert desk.paid == [500]


# --- bound to the step -------------------------------------------------------------------


def test_a_stale_id_after_a_denied_request_is_refused_and_names_the_new_one(
    store: SessionStore, cli: Cli
) -> None:
    desk = Desk(store)
    first = desk.agent(["never"], wire_guard, authenticator=authenticator())
    [asked] = first("wire $10 to Bob").interrupts
    listed_earlier = asked.id
    assert cli("--deny", listed_earlier, by="ana")[0] == 0
    assert str(desk.agent(["never"], wire_guard)().stop_reason) == "blocked"

    # The denied request never entered the history: the next one asks at the same run-0.
    second = desk.agent(["Wired."], wire_guard, authenticator=authenticator())
    [now] = second("wire $10000 to Mallory").interrupts
    assert now.id != listed_earlier
    assert now.id.split("#")[0] == listed_earlier.split("#")[0]

    # The customer replays the old id: refused before anything about the new step is told.
    with pytest.raises(ApprovalRefused, match="cannot be answered in a prompt") as hidden:
        desk.agent(["never"], wire_guard)(resume(listed_earlier, approve("customer")))
    assert "Mallory" not in str(hidden.value)
    # A second approver, working from the earlier listing.
    with pytest.raises(ValueError, match="is stale") as refused:
        second(resume(listed_earlier, approve("bo")))
    assert now.id in str(refused.value)
    assert "Mallory" in str(refused.value)
    status, _, err = cli("--approve", listed_earlier, by="bo")
    assert status == 2
    assert "is stale" in err
    assert now.id in err
    assert desk.paid == []
    assert [i.id for i in second.pending_interrupts] == [now.id]


def test_a_reused_tool_call_id_with_another_input_is_not_released_by_the_old_answer(
    store: SessionStore,
) -> None:
    desk = Desk(store)
    script = [
        calls(("refund", {"amount": 500}, "call_0")),
        # A small model reuses call_0, for another refund.
        calls(("refund", {"amount": 9000}, "call_0")),
        "never",
    ]
    agent = desk.agent(script, authenticator=authenticator())
    [first] = agent("refund 500").interrupts
    answer = resume(first.id, approve("ana"))
    again = agent(answer)
    assert desk.paid == [500]
    [second] = again.interrupts
    assert second.id != first.id
    assert second.reason["step"] == {"tool": "refund", "input": {"amount": 9000}}

    # The same resume, replayed.
    with pytest.raises(ValueError, match="is stale"):
        agent(answer)
    assert desk.paid == [500]


def test_a_reused_tool_call_id_with_the_same_input_in_the_same_run_asks_again(
    store: SessionStore, cli: Cli
) -> None:
    # The model asks for the very same call twice in one run: the second is another
    # refund, and no answer given for the first (however late it comes) may release it.
    desk = Desk(store)
    script = [
        calls(("refund", {"amount": 500}, "call_0")),
        calls(("refund", {"amount": 500}, "call_0")),
        "never",
    ]
    agent = desk.agent(script, authenticator=authenticator())
    [first] = agent("refund 500").interrupts
    again = agent(resume(first.id, approve("ana")))
    assert desk.paid == [500]
    [second] = again.interrupts
    assert second.id != first.id
    assert second.reason["step"] == first.reason["step"]

    # A second approver, working from the first listing, answers late.
    status, _, err = cli("--approve", first.id)
    assert status == 2
    assert "stale" in err
    with pytest.raises(ValueError, match="is stale"):
        agent(resume(first.id, approve("bo")))
    assert desk.paid == [500]


@pytest.mark.parametrize("second", [500, 9000], ids=["same input", "another input"])
def test_one_approval_cannot_release_two_calls_under_one_tool_use_id(
    store: SessionStore, second: int
) -> None:
    # A model (or a prompt steering it) repeats call_0 in one turn: with the same input one
    # answer would release both runs; with another, a replay would skip the second. The
    # turn is refused before any approval is asked, so there is no answer to reuse.
    desk = Desk(store)
    script = [
        calls(("refund", {"amount": 500}, "call_0"), ("refund", {"amount": second}, "call_0")),
        "never",
    ]
    agent = desk.agent(script, authenticator=authenticator())
    with pytest.raises(StreamAssemblyError, match="under one toolUseId 'call_0'"):
        agent("refund 500")
    assert agent.pending_interrupts == []
    assert desk.paid == []
    stored = store.load(SESSION)
    assert stored is not None
    assert [m["role"] for m in stored.snapshot["messages"]] == ["user"]


def test_the_same_step_in_a_later_cycle_is_not_released_by_an_old_answer(
    store: SessionStore,
) -> None:
    desk = Desk(store)
    script = [calls(("refund", {"amount": 500}, "call_0")), "Refunded."]
    agent = desk.agent(script * 2, authenticator=authenticator())
    [first] = agent("refund 500").interrupts
    answer = resume(first.id, approve("ana"))
    assert agent(answer).text == "Refunded."
    assert desk.paid == [500]

    # The same request, the same call id and input: it looks like the step approved before.
    [second] = agent("refund 500 again").interrupts
    assert second.id != first.id
    with pytest.raises(ValueError, match="is stale"):
        agent(answer)
    assert desk.paid == [500]


def _doubling(fail_mode: str) -> Any:
    """A middleware that doubles every refund, failing *fail_mode*."""

    @middleware(hooks=["tool.before"], fail_mode=fail_mode, timeout="2s", name="doubler")
    async def doubler(event: ToolCallEvent, env: PolicyEnv) -> Continue:
        return Continue(modified={"input": {"amount": event.input["amount"] * 2}})

    return doubler


@pytest.mark.parametrize("fail_mode", ["closed", "open"])
def test_a_later_middleware_cannot_change_a_step_after_it_was_approved(
    store: SessionStore, fail_mode: str
) -> None:
    desk = Desk(store)
    later = _doubling(fail_mode)
    first = desk.agent([calls(("refund", {"amount": 500}, "call_0"))], refund_guard, later)
    [asked] = first("refund 500").interrupts
    assert asked.reason["step"] == {"tool": "refund", "input": {"amount": 500}}

    agent = desk.agent(["Done."], refund_guard, later, authenticator=authenticator())
    result = agent(resume(asked.id, approve("ana")))

    [refused] = [d for d in result.decisions if d.middleware == "doubler"]
    assert refused.error == (
        "modifies a step that refund_guard already had approved as shown; a middleware "
        "that changes a step must come before the one that asks for its approval"
    )
    assert refused.modified is False
    if fail_mode == "closed":
        assert str(result.stop_reason) == "blocked"
        assert desk.paid == []
    else:
        # Open: the step runs as the approver was shown it, never as the doubler wanted.
        assert result.text == "Done."
        assert desk.paid == [500]


def test_a_change_made_before_the_approval_is_what_the_approver_sees_and_what_runs(
    store: SessionStore,
) -> None:
    desk = Desk(store)
    earlier = _doubling("closed")
    first = desk.agent([calls(("refund", {"amount": 500}, "call_0"))], earlier, refund_guard)
    [asked] = first("refund 500").interrupts
    assert asked.reason["step"] == {"tool": "refund", "input": {"amount": 1000}}

    agent = desk.agent(["Done."], earlier, refund_guard, authenticator=authenticator())
    result = agent(resume(asked.id, approve("ana")))
    assert result.text == "Done."
    assert desk.paid == [1000]
    assert all(d.error is None for d in result.decisions)


# --- who may answer ----------------------------------------------------------------------


def test_without_an_authenticator_a_prompt_cannot_approve(store: SessionStore, cli: Cli) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    agent = desk.agent(["Refunded."])

    with pytest.raises(ApprovalRefused) as refused:
        agent(resume(waiting, approve("customer")))

    message = str(refused.value)
    assert "cannot be answered in a prompt" in message
    assert "Record the answer with `stageware console` or `stageware policy" in message
    assert "approvals --approve/--deny" in message
    assert "PolicyEngine(authenticator=...)" in message
    assert desk.paid == []
    # The operator can: the command line answers as the OS account.
    assert cli("--approve", waiting)[0] == 0
    agent.reload_session()  # it was alive before the answer was recorded
    assert agent().text == "Refunded."
    assert desk.paid == [500]


def _tampered(token: str) -> str:
    body, signature = token.split(".")
    return f"{body[:-2]}xx.{signature}"


@pytest.mark.parametrize(
    ("forge", "expected"),
    [
        pytest.param(
            lambda: SignedCredentials(b"another secret of 32 bytes at least").issue("ana"),
            "not one this authenticator signed",
            id="wrong secret",
        ),
        pytest.param(
            lambda: _tampered(credential("ana")), "not one this authenticator signed", id="forged"
        ),
        pytest.param(
            lambda: SignedCredentials(SECRET, clock=lambda: 0.0).issue("ana", ttl=60),
            "credential of 'ana' has expired",
            id="expired",
        ),
        pytest.param(lambda: "ana", "not one this authenticator signed", id="a name"),
    ],
)
def test_a_credential_that_is_not_valid_is_refused(
    store: SessionStore, forge: Callable[[], str], expected: str
) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    agent = desk.agent(["Refunded."], authenticator=authenticator())

    with pytest.raises(ApprovalRefused, match=expected):
        agent(resume(waiting, {"approved": True, "credential": forge()}))
    with pytest.raises(ApprovalRefused, match="who answers is not given in the answer"):
        agent(resume(waiting, {"approved": True, "approver": "cfo@example.com"}))

    assert desk.paid == []
    assert [i.id for i in agent.pending_interrupts] == [waiting]
    assert agent(resume(waiting, approve("ana"))).text == "Refunded."


def test_approvers_are_enforced_on_a_resume_and_on_the_command_line(
    store: SessionStore, cli: Cli
) -> None:
    desk = Desk(store)
    waiting = _finance_suspended(desk)
    agent = desk.agent(["Refunded."], finance_guard, authenticator=authenticator())

    with pytest.raises(ApprovalRefused) as refused:
        agent(resume(waiting, approve("eve", roles=["support"])))
    assert "eve (roles: support; via authenticator) may not answer" in str(refused.value)
    assert "it may be answered by: role:finance" in str(refused.value)
    status, _, err = cli("--approve", waiting, by="ana", roles=["support"])
    assert status == 2
    assert "ana (roles: support; via authenticator) may not answer" in err
    assert desk.paid == []

    status, out, _ = cli("--approve", waiting, by="fin", roles=["finance"])
    assert status == 0
    assert "as 'fin' (authenticator)" in out
    agent.reload_session()
    assert agent().text == "Refunded."
    assert desk.paid == [500]


def _finance_suspended(desk: Desk) -> str:
    result = desk.agent([calls(("refund", {"amount": 500}, "call_0"))], finance_guard)("refund")
    [interrupt] = result.interrupts
    assert interrupt.reason["approvers"] == ["role:finance"]
    return interrupt.id


def test_the_command_line_answers_as_the_os_account(store: SessionStore, cli: Cli) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    account = pwd.getpwuid(os.geteuid()).pw_name

    status, _, err = cli("--approve", waiting, "--by", "cfo@example.com")
    assert status == 2
    assert "--by is no longer accepted" in err
    status, out, _ = cli("--approve", waiting, "--comment", "ok")
    assert status == 0
    assert f"as '{account}' (os-user)" in out

    stored = store.load(SESSION)
    assert stored is not None
    [record] = [i["response"] for i in stored.snapshot["interrupt_state"]["interrupts"]]
    assert (record["approver"], record["via"], record["comment"]) == (account, "os-user", "ok")
    assert record["fingerprint"].startswith(waiting.split("#")[1])


def test_the_session_keeps_the_verified_record_not_the_credential(store: SessionStore) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    agent = desk.agent(["Refunded."], authenticator=authenticator())
    answer = approve("ana", roles=["finance"])

    result = agent(resume(waiting, answer))

    assert result.text == "Refunded."
    # Read by the tool while it ran: the session held the answer then.
    [snapshot] = desk.snapshots
    assert answer["credential"] not in json.dumps(snapshot)
    [record] = [i["response"] for i in snapshot["interrupt_state"]["interrupts"]]
    assert set(record) == {
        "approved",
        "approver",
        "roles",
        "via",
        "comment",
        "fingerprint",
        "answered_at",
    }
    assert (record["approver"], record["roles"], record["via"]) == (
        "ana",
        ["finance"],
        "authenticator",
    )
    [decision] = [d for d in result.decisions if d.hook == "tool.before"]
    assert decision.approver == "ana"


# --- upgrading -----------------------------------------------------------------------------


def _as_written_before(store: SessionStore, *, answered: bool) -> str:
    """Rewrite the session's waiting approval as a stageware with v1 ids stored it."""
    stored = store.load(SESSION)
    assert stored is not None
    snapshot = stored.snapshot
    state = snapshot["interrupt_state"]
    del state["cycle"]
    [interrupt] = state["interrupts"]
    old_id: str = interrupt["id"].replace("v2:", "v1:").split("#")[0]
    interrupt["id"] = old_id
    interrupt["reason"] = {"policy": "refund_guard", "reason": "refund of 500", "event": {}}
    if answered:
        interrupt["response"] = {"approved": True, "approver": "typed-in"}
    kept = len(snapshot["messages"])
    snapshot["messages"] = []
    store.save(
        SESSION,
        snapshot,
        expected_version=stored.version,
        owner="upgrade",
        lease_seconds=None,
        kept_messages=kept,
    )
    return old_id


@pytest.mark.parametrize("answered", [False, True], ids=["pending", "answered"])
def test_a_v1_approval_from_before_the_upgrade_is_asked_again(
    store: SessionStore, answered: bool
) -> None:
    desk = Desk(store)
    suspended(desk)
    old_id = _as_written_before(store, answered=answered)
    agent = desk.agent(["Refunded."], authenticator=authenticator())

    # Whatever the answer, and whoever typed it, a v1 approval releases nothing.
    asked = agent() if answered else agent(resume(old_id, {"approved": True, "approver": "x"}))

    assert desk.paid == []
    [again] = asked.interrupts
    assert again.id.startswith("v2:policy:tool.before:refund_guard:call_0#")
    assert again.reason["step"] == {"tool": "refund", "input": {"amount": 500}}
    assert agent(resume(again.id, approve("ana"))).text == "Refunded."
    assert desk.paid == [500]


def test_the_command_line_does_not_answer_a_v1_approval(store: SessionStore, cli: Cli) -> None:
    desk = Desk(store)
    suspended(desk)
    old_id = _as_written_before(store, answered=False)

    status, _, err = cli("--approve", old_id)

    assert status == 2
    assert "is asked again under a v2:policy: id" in err
    assert desk.paid == []


@pytest.mark.anyio
async def test_the_decision_span_names_the_verified_approver() -> None:
    recorder = Recorder.start()
    ledger = Ledger()
    agent = Agent(
        ScriptedModel([calls(("refund", {"amount": 500}, "call_0")), "Refunded."]),
        tools=[ledger.tool],
        policy=PolicyEngine([refund_guard], authenticator=authenticator()),
        tracer_provider=recorder.provider,
    )
    [waiting] = (await agent.invoke_async("refund 500")).interrupts

    await agent.invoke_async(resume(waiting.id, approve("ana")))

    assert ledger.payouts == [500]
    spans = [
        attributes(span)
        for span in recorder.exporter.get_finished_spans()
        if attributes(span).get("stageware.policy.approver") is not None
    ]
    assert [(s["stageware.policy.approver"], s["stageware.policy.outcome"]) for s in spans] == [
        ("ana", "continue")
    ]


def test_show_prints_the_whole_step_the_listing_cuts(store: SessionStore, cli: Cli) -> None:
    desk = Desk(store)
    memo = " ".join(["quarterly reconciliation"] * 8)
    agent = desk.agent([calls(("refund", {"amount": 500, "memo": memo, "to": "Mallory"}, "c1"))])
    [waiting] = agent("refund").interrupts

    _, listing, _ = cli()
    status, shown, _ = cli("--show", waiting.id)

    assert "Mallory" not in listing  # cut to fit the line
    assert status == 0
    assert shown.splitlines() == [
        f"approval {waiting.id} in session '{SESSION}'",
        "  reason: refund of 500",
        "  who may answer: any verified approver",
        "  details: {}",
        "  step: "
        + json.dumps(
            {"input": {"amount": 500, "memo": memo, "to": "Mallory"}, "tool": "refund"},
            sort_keys=True,
        ),
    ]
    status, _, err = cli("--show", waiting.id.replace("c1#", "c2#"))
    assert status == 2
    assert "no session waits on an approval" in err


# --- what an error tells ---------------------------------------------------------------------


def test_a_malformed_resume_does_not_echo_the_credential(store: SessionStore) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    token = credential("olga")
    agent = desk.agent(["Refunded."], authenticator=authenticator())
    typo = {"interruptID": waiting, "response": {"approved": True, "credential": token}}

    with pytest.raises(TypeError) as refused:
        agent([{"interruptResponse": typo}])

    message = str(refused.value)
    # The keys it has, to spot the typo; no value, so no credential to replay.
    assert "got a dict with keys {'interruptID': str, 'response': dict}" in message
    assert token.split(".")[1] not in message
    assert waiting not in message
    with pytest.raises(TypeError, match=r"must be a dict .*, got a str$"):
        agent([{"interruptResponse": token}])
    assert desk.paid == []


def test_an_unknown_id_does_not_list_the_approvals_that_wait(store: SessionStore) -> None:
    desk = Desk(store)
    waiting = suspended(desk)
    agent = desk.agent(["Refunded."], authenticator=authenticator())

    with pytest.raises(KeyError) as refused:
        agent(resume("made-up", approve("olga")))

    message = str(refused.value)
    assert message.startswith("no interrupt with id 'made-up' is registered; ")
    assert "agent.pending_interrupts" in message
    assert "stageware policy approvals" in message
    assert waiting not in message
    assert desk.paid == []


def test_an_approver_whose_id_spells_a_role_does_not_hold_it(store: SessionStore) -> None:
    desk = Desk(store)
    waiting = _finance_suspended(desk)
    agent = desk.agent(["Refunded."], finance_guard, authenticator=authenticator())
    # A console that signs whatever user name it was given: "role:finance", no roles.
    token = signed(b'{"sub":"role:finance","roles":[],"exp":1e12}')

    with pytest.raises(ApprovalRefused, match="may not start with 'role:'"):
        agent(resume(waiting, {"approved": True, "credential": token}))

    assert desk.paid == []
    assert [i.id for i in agent.pending_interrupts] == [waiting]
    assert agent(resume(waiting, approve("fin", roles=["finance"]))).text == "Refunded."
