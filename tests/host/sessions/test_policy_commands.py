"""``stageware policy escalations`` and ``stageware policy approvals``, on SQLite and Postgres.

The commands are run through ``main([...])``, as the console script runs them, and once
in a real process. A suspended approval is made by a real agent run with a policy whose
middleware returns ``Suspend`` for a large refund.
"""

from __future__ import annotations

import os
import pwd
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from stageware import (
    Agent,
    ScriptedModel,
    SessionStore,
    SQLiteSessionStore,
    tool,
)
from stageware._cli._operator import AUTHENTICATOR_VARIABLE, CREDENTIAL_VARIABLE
from stageware._policy._approval import fingerprint, interrupt_id
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from stageware_codegen.cli import main
from tests.host.agent_helpers import calls
from tests.policy.approvers import FACTORY, credential

from .stores import StoreSpec, escalate, make_snapshot

ROOT = Path(__file__).resolve().parents[3]


def store_arguments(spec: StoreSpec) -> list[str]:
    if spec.kind == "sqlite":
        return ["--store", f"sqlite:///{spec.target}"]
    return ["--store", spec.target, "--schema", spec.schema]


Run = Callable[..., tuple[int, str, str]]


def operator_env(by: str, roles: Sequence[str] = ()) -> dict[str, str]:
    """The environment in which the command line acts as *by*: a deployment's authenticator
    (the tests' secret) and a credential it issued."""
    return {
        AUTHENTICATOR_VARIABLE: FACTORY,
        CREDENTIAL_VARIABLE: credential(by, roles),
    }


@pytest.fixture
def run(
    shared_spec: StoreSpec, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Run:
    """``run(action, *arguments, by=None, roles=())``: the exit status, stdout and stderr of
    one command, run as the operator *by* (verified by the tests' authenticator) or, without
    it, as the OS account running the tests."""

    def run_(
        action: str,
        *arguments: str,
        by: str | None = None,
        roles: Sequence[str] = (),
        keep_env: bool = False,
    ) -> tuple[int, str, str]:
        capsys.readouterr()
        with monkeypatch.context() as env:
            if not keep_env:
                env.delenv(AUTHENTICATOR_VARIABLE, raising=False)
                env.delenv(CREDENTIAL_VARIABLE, raising=False)
            for name, value in ({} if by is None else operator_env(by, roles)).items():
                env.setenv(name, value)
            status = main(["policy", action, *store_arguments(shared_spec), *arguments])
        out, err = capsys.readouterr()
        return status, out, err

    return run_


@pytest.fixture
def store(shared_spec: StoreSpec, opener: Callable[[StoreSpec], SessionStore]) -> SessionStore:
    return opener(shared_spec)


def error_line(err: str) -> str:
    """The one line a failed command prints."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- policy escalations ------------------------------------------------------------------


def test_escalations_lists_the_unresolved_oldest_first(store: SessionStore, run: Run) -> None:
    store.session_ids()  # the store's tables, empty
    assert run("escalations") == (0, "no open or claimed escalations\n", "")
    now = datetime.now(UTC)
    newer = escalate(store, "s-newer", created_at=now - timedelta(minutes=5))
    older = escalate(store, "s-older", queue="fraud", created_at=now - timedelta(hours=3))
    done = escalate(store, "s-done", created_at=now - timedelta(days=2))
    store.claim_escalation(older.id, by="ana")
    store.resolve_escalation(done.id, by="bo", resolution="refunded")

    status, out, err = run("escalations")

    assert (status, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == [
        "ID",
        "QUEUE",
        "SESSION",
        "HOOK",
        "MIDDLEWARE",
        "REASON",
        "AGE",
        "STATUS",
    ]
    assert len(rows) == 2
    assert rows[0].startswith(older.id)
    assert "fraud" in rows[0]
    assert "s-older" in rows[0]
    assert "tool.before" in rows[0]
    assert "refund_limit" in rows[0]
    assert "a refund for s-older is over the limit" in rows[0]
    assert rows[0].split()[-4:] == ["3h", "claimed", "by", "ana"]
    assert rows[1].startswith(newer.id)
    assert rows[1].split()[-2:] == ["5m", "open"]
    # The columns line up.
    assert rows[0].index("fraud") == rows[1].index("refunds") == header.index("QUEUE")

    status, out, _ = run("escalations", "--queue", "refunds")
    assert [line.split()[0] for line in out.splitlines()[1:]] == [newer.id]
    status, out, _ = run("escalations", "--status", "resolved")
    assert [line.split()[0] for line in out.splitlines()[1:]] == [done.id]
    assert out.splitlines()[1].split()[-4:] == ["2d", "resolved", "by", "bo"]
    status, out, _ = run("escalations", "--status", "all")
    assert [line.split()[0] for line in out.splitlines()[1:]] == [done.id, older.id, newer.id]
    assert run("escalations", "--queue", "none", "--status", "open") == (
        0,
        "no open escalations in queue 'none'\n",
        "",
    )


def test_a_reason_is_shown_on_one_line_with_control_characters_escaped(
    store: SessionStore, run: Run
) -> None:
    escalate(store, "s1", reason="line one\nline two \x1b[31mred\x1b[0m " + "x" * 100)

    _, out, _ = run("escalations")

    [row] = out.splitlines()[1:]
    assert "line one line two \\x1b[31mred\\x1b[0m xxx" in row
    assert "\x1b" not in out
    assert "..." in row


def test_escalations_are_claimed_as_the_os_account(store: SessionStore, run: Run) -> None:
    escalation = escalate(store, "s1")

    status, out, err = run("escalations", "--claim", escalation.id)

    account = pwd.getpwuid(os.geteuid()).pw_name
    assert (status, err) == (0, "")
    assert out.endswith(f"for '{account}'\n")
    found = store.open_escalation("s1")
    assert found is not None
    assert found.claimed_by == account


def test_a_deployment_authenticator_that_cannot_verify_is_refused(
    store: SessionStore, run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    escalation = escalate(store, "s1")
    token = tmp_path / "token"
    token.write_text(credential("ana") + "\n")
    with monkeypatch.context() as env:
        env.setenv(AUTHENTICATOR_VARIABLE, FACTORY)
        # The credential from a file, for the deployment's authenticator.
        status, out, _ = main_status(run, escalation.id, ["--credential-file", str(token)])
    assert status == 0
    assert out.endswith("for 'ana'\n")
    cases = [
        ({AUTHENTICATOR_VARIABLE: "nocolon"}, [], "must be package.module:factory"),
        ({AUTHENTICATOR_VARIABLE: "no.such.module:f"}, [], "could not build an authenticator"),
        ({AUTHENTICATOR_VARIABLE: FACTORY}, [], "give --credential-file or set"),
        (
            {AUTHENTICATOR_VARIABLE: FACTORY, CREDENTIAL_VARIABLE: "forged.token"},
            [],
            "refused the credential: the credential is not one this authenticator signed",
        ),
        ({}, ["--credential-file", str(token)], "--credential-file needs"),
    ]
    for variables, arguments, expected in cases:
        with monkeypatch.context() as env:
            for name, value in variables.items():
                env.setenv(name, value)
            status, _, err = main_status(run, escalation.id, arguments)
        assert status == 2, variables
        assert expected in error_line(err), (variables, err)
    found = store.open_escalation("s1")
    assert found is not None
    assert found.claimed_by == "ana"  # only the verified claim


def main_status(run: Run, escalation_id: str, arguments: list[str]) -> tuple[int, str, str]:
    """Claim as whatever the environment says (``run`` otherwise clears it first)."""
    return run("escalations", "--claim", escalation_id, *arguments, keep_env=True)


def test_escalations_claims_and_resolves(store: SessionStore, run: Run) -> None:
    escalation = escalate(store, "s1")

    status, out, err = run("escalations", "--claim", escalation.id, by="ana")
    assert (status, err) == (0, "")
    assert out == (
        f"claimed escalation {escalation.id} (queue 'refunds', session 's1') for 'ana'\n"
    )
    found = store.open_escalation("s1")
    assert found is not None
    assert found.claimed_by == "ana"

    status, _, err = run("escalations", "--claim", escalation.id, by="bo")
    assert status == 2
    assert error_line(err).startswith(
        f"stageware policy escalations: cannot claim escalation '{escalation.id}'"
    )
    assert "'ana' claimed it" in err

    status, _, err = run(
        "escalations", "--resolve", escalation.id, "--resolution", "refunded", by="bo"
    )
    assert status == 2
    assert "pass take_over=True (--take-over)" in error_line(err)

    status, out, err = run(
        "escalations",
        "--resolve",
        escalation.id,
        "--resolution",
        "refunded by hand",
        "--comment",
        "customer called",
        "--take-over",
        by="bo",
    )
    assert (status, err) == (0, "")
    assert out == (
        f"resolved escalation {escalation.id} as 'bo': refunded by hand; session 's1' takes "
        "prompts again\n"
    )
    assert store.open_escalation("s1") is None
    [resolved] = store.escalations()
    assert (resolved.claimed_by, resolved.resolved_by, resolved.comment) == (
        "ana",
        "bo",
        "customer called",
    )

    status, _, err = run(
        "escalations", "--resolve", escalation.id, "--resolution", "again", by="ana"
    )
    assert status == 2
    assert "'bo' resolved it already" in error_line(err)


def test_an_unknown_escalation_is_one_line(run: Run, store: SessionStore) -> None:
    escalate(store, "s1")

    status, out, err = run("escalations", "--claim", "nope", by="ana")

    assert (status, out) == (2, "")
    line = error_line(err)
    assert line.startswith("stageware policy escalations: cannot claim escalation 'nope': ")
    assert line.endswith(" holds no escalation with that id")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(["--claim", "x", "--by", "a"], "--by is no longer accepted", id="claim by"),
        pytest.param(["--resolve", "x"], "--resolve needs --resolution", id="no text"),
        pytest.param(["--comment", "c"], "--comment goes with --resolve", id="stray comment"),
        pytest.param(["--by", "a"], "--by is no longer accepted", id="stray by"),
        pytest.param(
            ["--credential-file", "c"],
            "--credential-file goes with --claim or --resolve",
            id="stray credential",
        ),
        pytest.param(["--take-over"], "--take-over goes with --resolve", id="stray take-over"),
        pytest.param(
            ["--claim", "x", "--queue", "q"],
            "--queue goes with a listing",
            id="queue with claim",
        ),
    ],
)
def test_escalations_refuses_options_that_do_not_go_together(
    run: Run, store: SessionStore, arguments: list[str], expected: str
) -> None:
    escalate(store, "s1")

    status, _, err = run("escalations", *arguments)

    assert status == 2
    assert error_line(err).startswith(f"stageware policy escalations: {expected}")


# --- policy approvals --------------------------------------------------------------------


SESSION = "customer-7"
# The id binds the step: the agent's id, its hook point, middleware, step key, event (without
# the run id),
# the session's interrupt cycle (0: the session's first) and the history's length (the
# prompt and the model's tool call: 2).
POLICY_ID = interrupt_id(
    "tool.before",
    "refund_guard",
    "t1",
    fingerprint(
        "tool.before",
        "refund_guard",
        "t1",
        ToolCallEvent(run_id="any", tool_name="refund", tool_use_id="t1", input={"amount": 900}),
        0,
        2,
        agent_id="agent",
    ),
)


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Refunds over 500 wait for a manager."""
    if event.input.get("amount", 0) > 500:
        return Suspend(
            "a refund over 500 needs a manager", details={"amount": event.input["amount"]}
        )
    return None


class Desk:
    """A refund tool that records its payouts, behind the policy that suspends big ones."""

    def __init__(self) -> None:
        self.paid: list[int] = []

        @tool
        def refund(amount: int) -> str:
            """Refund an amount.

            Args:
                amount: How much.
            """
            self.paid.append(amount)
            return "refunded"

        self.refund = refund

    def agent(self, store: SessionStore, replies: list[Any], session_id: str = SESSION) -> Agent:
        return Agent(
            ScriptedModel(replies),
            tools=[self.refund],
            policy=PolicyEngine([refund_guard]),
            session_store=store,
            session_id=session_id,
        )


def suspend(store: SessionStore, desk: Desk, session_id: str = SESSION) -> None:
    result = desk.agent(store, [calls(("refund", {"amount": 900}, "t1"))], session_id)("refund 900")
    assert result.stop_reason == "interrupt"
    assert [i.id for i in result.interrupts] == [POLICY_ID]


def test_approvals_lists_the_suspended_steps(store: SessionStore, run: Run) -> None:
    store.session_ids()  # the store's tables, empty
    assert run("approvals") == (0, "no suspended approvals\n", "")
    desk = Desk()
    suspend(store, desk)
    # A session without a policy interrupt, and one stopped on a plain tool interrupt, are
    # not listed.
    Agent(ScriptedModel(["hi"]), session_store=store, session_id="plain")("hello")

    status, out, err = run("approvals")

    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"SESSION     INTERRUPT{' ' * (len(POLICY_ID) - 7)}REASON{' ' * 29}STEP"
        f"{' ' * 42}WHO MAY ANSWER{' ' * 9}DEADLINE",
        f"{SESSION}  {POLICY_ID}  a refund over 500 needs a manager  "
        '{"input": {"amount": 900}, "tool": "refund"}  any verified approver  -',
    ]


def test_an_approval_lets_the_app_continue_and_the_step_runs_once(
    store: SessionStore,
    run: Run,
    shared_spec: StoreSpec,
    opener: Callable[[StoreSpec], SessionStore],
) -> None:
    desk = Desk()
    suspend(store, desk)

    status, out, err = run("approvals", "--approve", POLICY_ID, "--comment", "ok", by="ana")

    assert (status, err) == (0, "")
    assert out == (
        f"approved {POLICY_ID} in session '{SESSION}' as 'ana' (authenticator); the "
        "application continues "
        "the run with agent() and no prompt\n"
    )
    assert run("approvals")[1] == "no suspended approvals\n"
    # A new worker (a new store on the database, as after a restart) continues the run.
    worker = desk.agent(opener(shared_spec), ["Refunded 900."])
    result = worker()
    assert result.text == "Refunded 900."
    assert desk.paid == [900]

    status, _, err = run("approvals", "--approve", POLICY_ID, by="ana")
    assert status == 2
    assert "no session waits on an approval" in error_line(err)
    assert desk.paid == [900]


def test_a_denial_blocks_the_step(store: SessionStore, run: Run) -> None:
    desk = Desk()
    suspend(store, desk)

    status, out, _ = run("approvals", "--deny", POLICY_ID, by="bo")
    assert status == 0
    assert out.startswith(f"denied {POLICY_ID} in session '{SESSION}' as 'bo'")

    result = desk.agent(store, ["never"])()
    # Widened: the generated StopReason does not list the policy layer's stops yet.
    assert cast(str, result.stop_reason) == "blocked"
    assert desk.paid == []


def test_an_answer_to_a_session_a_worker_runs_is_refused(store: SessionStore, run: Run) -> None:
    desk = Desk()
    suspend(store, desk)
    stored = store.load(SESSION)
    assert stored is not None
    # A worker has claimed the session (its lease is live).
    store.save(
        SESSION,
        stored.snapshot,
        expected_version=stored.version,
        owner="worker-9",
        lease_seconds=30,
    )

    status, _, err = run("approvals", "--approve", POLICY_ID, by="ana")

    assert status == 2
    line = error_line(err)
    assert f"session '{SESSION}' is in use by worker 'worker-9' until" in line
    assert "nothing was written" in line
    after = store.load(SESSION)
    assert after is not None
    assert after.version == stored.version + 1  # only the worker's save
    assert "a refund over 500" in run("approvals")[1]


def test_an_answer_loads_only_the_session_the_ledger_says_holds_the_step(
    store: SessionStore, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    desk = Desk()
    suspend(store, desk, "holder")
    for number in range(3):
        Agent(ScriptedModel(["hi"]), session_store=store, session_id=f"other-{number}")("hello")
    loaded: list[str] = []
    load = type(store).load

    def recording(self: SessionStore, session_id: str) -> object:
        loaded.append(session_id)
        return load(self, session_id)

    # The command opens a store of its own: record loads on every store of the kind.
    monkeypatch.setattr(type(store), "load", recording)
    status, out, err = run("approvals", "--approve", POLICY_ID, by="ana")

    assert (status, err) == (0, "")
    assert out.startswith(f"approved {POLICY_ID} in session 'holder'")
    assert set(loaded) == {"holder"}


def test_approvals_needs_one_policy_interrupt_in_one_session(store: SessionStore, run: Run) -> None:
    desk = Desk()
    suspend(store, desk, "first")
    suspend(store, desk, "second")

    status, _, err = run("approvals", "--approve", POLICY_ID, by="ana")
    assert status == 2
    assert "waits in several sessions ('first', 'second'); name one with --session" in err

    status, out, _ = run("approvals", "--approve", POLICY_ID, "--session", "second", by="ana")
    assert status == 0
    assert "in session 'second'" in out
    assert run("approvals")[1].splitlines()[1].startswith("first")

    status, _, err = run("approvals", "--approve", "v1:tool_call:t1:x", by="ana")
    assert status == 2
    assert "is not a policy approval" in error_line(err)
    unknown = POLICY_ID.replace(":t1#", ":t9#")
    status, _, err = run("approvals", "--deny", unknown, by="a")
    assert status == 2
    assert f"no session waits on an approval '{unknown}'" in err
    status, _, err = run("approvals", "--deny", "v2:policy:nope", by="ana")
    assert status == 2
    assert "'v2:policy:nope' is not a policy approval" in error_line(err)
    status, _, err = run("approvals", "--deny", POLICY_ID, "--by", "ana")
    assert "--by is no longer accepted: anyone can type a name" in error_line(err)
    status, _, err = run("approvals", "--by", "ana")
    assert "--by is no longer accepted" in error_line(err)
    status, _, err = run("approvals", "--credential-file", "c")
    assert "--credential-file goes with --approve or --deny" in error_line(err)
    status, _, err = run("approvals", "--show", POLICY_ID, "--comment", "c")
    assert "--comment goes with --approve or --deny" in error_line(err)
    status, _, err = run("approvals", "--session", "first")
    assert "--session goes with --approve, --deny or --show" in error_line(err)


def test_a_session_that_cannot_be_read_hides_no_approval(store: SessionStore, run: Run) -> None:
    suspend(store, Desk())
    # Interrupt state in a shape this host never wrote: the listing reads the ledger, not
    # the sessions, so it is not even looked at.
    store.save("odd", make_snapshot(), expected_version=0, owner="w", lease_seconds=None)

    status, out, err = run("approvals")

    assert (status, err) == (0, "")
    assert POLICY_ID in out
    assert "odd" not in out


def test_approvals_lists_from_the_ledger_without_loading_a_session(
    store: SessionStore, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    desk = Desk()
    suspend(store, desk, "first")
    suspend(store, desk, "second")

    def no_load(session_id: str) -> None:
        raise AssertionError(f"the listing loaded session {session_id!r}")

    # The command opens a store of its own: refuse loads on every store of the kind.
    monkeypatch.setattr(type(store), "load", lambda self, session_id: no_load(session_id))
    status, out, err = run("approvals")
    assert (status, err) == (0, "")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["first", "second"]
    status, out, err = run("approvals", "--show", POLICY_ID, "--session", "second")
    assert (status, err) == (0, "")
    assert out.startswith(f"approval {POLICY_ID} in session 'second'")


# --- --store --------------------------------------------------------------------------


def test_a_store_that_is_not_there_is_refused_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    other = tmp_path / "other.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE orders (id INTEGER)")
    connection.close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just long enough to be read as one " * 20)
    cases = [
        ([str(missing)], f"--store {missing}: no such file; an agent makes one when it runs "),
        ([f"sqlite:///{missing}"], f"--store {missing}: no such file"),
        ([str(other)], f"--store {other}: holds no stageware sessions"),
        ([str(text)], f"--store {text}: cannot read it as an SQLite database"),
        (["sqlite://host/x.db"], "--store sqlite://host/x.db: an SQLite URL is sqlite:///"),
        (["redis://user:s3cret@host/0"], "--store: redis:// is no kind of store"),
        ([str(other), "--schema", "x"], "--schema names a PostgreSQL schema"),
        ([""], "--store is empty"),
    ]
    for arguments, expected in cases:
        capsys.readouterr()
        status = main(["policy", "escalations", "--store", *arguments])
        _, err = capsys.readouterr()
        assert status == 2, arguments
        line = error_line(err)
        assert line.startswith(f"stageware policy escalations: {expected}"), line
        assert "s3cret" not in line

    assert not missing.exists()
    connection = sqlite3.connect(other)
    tables = connection.execute("SELECT name FROM sqlite_master").fetchall()
    connection.close()
    assert tables == [("orders",)]


def test_a_relative_sqlite_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    SQLiteSessionStore(tmp_path / "here.db").session_ids()
    monkeypatch.chdir(tmp_path)

    assert main(["policy", "escalations", "--store", "sqlite:///here.db"]) == 0
    assert main(["policy", "approvals", "--store", "here.db"]) == 0
    assert capsys.readouterr().out == "no open or claimed escalations\nno suspended approvals\n"


def test_a_postgres_schema_without_a_store_is_refused(
    postgres_spec: StoreSpec, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        ["policy", "escalations", "--store", postgres_spec.target, "--schema", postgres_spec.schema]
    )

    assert status == 2
    line = error_line(capsys.readouterr().err)
    assert f"(schema {postgres_spec.schema}): holds no stageware sessions" in line


def test_an_unreachable_postgres_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["policy", "approvals", "--store", "postgresql://app:s3cret@127.0.0.1:1/orders"])

    assert status == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith(
        "stageware policy approvals: --store postgresql://app:***@127.0.0.1:1/orders "
        "(schema stageware): "
        "cannot connect:"
    )
    assert "s3cret" not in line


def test_without_the_postgres_extra_the_command_names_it() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from stageware_codegen.cli import main\n"
        "sys.exit(main(['policy', 'escalations', '--store', 'postgresql://app@db/x']))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )

    assert completed.returncode == 2
    assert completed.stderr == (
        "stageware policy escalations: --store postgresql://...: the PostgreSQL store needs "
        "the `postgres` extra: pip install -e '.[postgres]' in a clone, "
        "or pip install 'stageware[postgres] @ git+https://<your-git-host>/stageware.git'\n"
    )


def test_the_commands_in_a_real_process(shared_spec: StoreSpec, store: SessionStore) -> None:
    escalation = escalate(store, "s1")
    command = [sys.executable, "-m", "stageware_codegen.cli", "policy", "escalations"]
    arguments = store_arguments(shared_spec)

    listed = subprocess.run(
        [*command, *arguments], capture_output=True, text=True, check=False, cwd=ROOT
    )
    claimed = subprocess.run(
        [*command, *arguments, "--claim", escalation.id],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, **operator_env("ana")},
    )
    refused = subprocess.run(
        [*command, *arguments, "--claim", escalation.id],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, **operator_env("bo")},
    )

    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.splitlines()[1].startswith(escalation.id)
    assert (claimed.returncode, claimed.stderr) == (0, "")
    assert claimed.stdout.startswith(f"claimed escalation {escalation.id}")
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert error_line(refused.stderr).startswith(
        "stageware policy escalations: cannot claim escalation"
    )


def test_a_credential_that_is_not_text_is_one_line(
    store: SessionStore, run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    desk = Desk()
    suspend(store, desk)
    token = tmp_path / "token"
    token.write_bytes(b"abc\xff.def")

    with monkeypatch.context() as env:
        env.setenv(AUTHENTICATOR_VARIABLE, FACTORY)
        status, _, err = run(
            "approvals", "--approve", POLICY_ID, "--credential-file", str(token), keep_env=True
        )
    assert status == 2
    assert f"--credential-file {token}: not UTF-8 text (byte 3)" in error_line(err)
    # A non-UTF-8 variable reaches Python as a lone surrogate: refused like a forgery.
    with monkeypatch.context() as env:
        env.setenv(AUTHENTICATOR_VARIABLE, FACTORY)
        env.setenv(CREDENTIAL_VARIABLE, "abc\udcff.def")
        status, _, err = run("approvals", "--approve", POLICY_ID, keep_env=True)
    assert status == 2
    assert "refused the credential: the credential is not one this authenticator" in error_line(err)
    assert run("approvals")[1] != "no suspended approvals\n"
    assert desk.paid == []
