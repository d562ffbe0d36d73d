"""Durable waits for a human on DBOS, on SQLite and on the real PostgreSQL server.

A refund run (``waits_flow``) suspends on a policy approval inside a DBOS workflow and
waits; the real ``stageware`` command, in another process, approves, denies or resolves
and wakes it (``--dbos``). Each test counts the refund tool's runs in a ledger file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from dbos import DBOS, DBOSConfig, SetWorkflowID

from stageware._dbos._wake import waiting_on, wake
from tests.host.sessions.conftest import private_postgres, worker_database
from tests.host.sessions.private_server import PrivateServer
from tests.host.sessions.stores import (
    StoreSpec,
    close_store,
    fresh_schema_name,
    open_store,
)
from tests.readme import page_of, readme_blocks

from .pending import pending_approval
from .waits_flow import APP_VERSION, KIND, refund_in_place, refund_until_answered

__all__ = ["private_postgres"]  # the fixture, for the database-restart test

STAGEWARE = str(Path(sys.executable).parent / "stageware")
ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "waits-tests"
SCHEMA = "waits_dbos"
WORKER = "waits-worker"


def _system_database(spec: StoreSpec, tmp_path: Path) -> Iterator[str]:
    """A DBOS system database of the test's own, beside the session store."""
    if spec.kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        return
    # A database of the test's own on the store's server: DBOS makes its tables there.
    yield from worker_database(spec.target, f"dbos_{uuid.uuid4().hex[:12]}")


Launch = Callable[..., None]


@pytest.fixture
def system_database(shared_spec: StoreSpec, tmp_path: Path) -> Iterator[str]:
    yield from _system_database(shared_spec, tmp_path)


@pytest.fixture
def launch(system_database: str) -> Iterator[Launch]:
    """``launch(executor=EXECUTOR)``: (re)start this process's DBOS as *executor*."""

    def launch_(executor: str = EXECUTOR) -> None:
        DBOS.destroy()
        config: DBOSConfig = {
            "name": "stageware-waits",
            "system_database_url": system_database,
            "executor_id": executor,
            # Not DBOS's default schema: the command line must be told (--dbos-schema).
            "dbos_system_schema": SCHEMA,
            "notification_listener_polling_interval_sec": 0.05,
            # Fixed: DBOS derives a version from the workflows a process registered and
            # recovers only its own version's; the worker and the tests register different sets.
            "application_version": APP_VERSION,
        }
        DBOS(config=config)
        DBOS.launch()

    launch_()
    yield launch_
    DBOS.destroy()


@pytest.fixture
def setup(shared_spec: StoreSpec, tmp_path: Path) -> dict[str, Any]:
    return {
        "spec": shared_spec.to_json(),
        "ledger": str(tmp_path / "ledger.txt"),
        "log": str(tmp_path / "invocations.txt"),
        "timeout": None,
        "on_timeout": None,
        # Far longer than any test: only a wake-up or a deadline ends a wait in time.
        "recheck": 600.0,
    }


def lines(path: str) -> list[str]:
    file = Path(path)
    return file.read_text().splitlines() if file.exists() else []


def start(setup: dict[str, Any], session_id: str, flow: Any = refund_until_answered) -> str:
    workflow_id = f"stageware:{KIND}:{session_id}:{uuid.uuid4().hex}"
    with SetWorkflowID(workflow_id):
        DBOS.start_workflow(flow, json.dumps(setup), session_id)
    return workflow_id


def checks(workflow_id: str) -> int:
    """How many times the workflow has read its session for answers so far."""
    return sum(
        step["function_name"] == "stageware:approvals"
        for step in DBOS.list_workflow_steps(workflow_id)
    )


def settle(workflow_id: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = DBOS.get_workflow_status(workflow_id)
        assert status is not None
        if status.status == "SUCCESS":
            return cast(dict[str, Any], DBOS.retrieve_workflow(workflow_id).get_result())
        # ENQUEUED: recovered, and queued to run again.
        assert status.status in {"PENDING", "ENQUEUED"}, (status.status, status.error)
        time.sleep(0.05)
    raise AssertionError(f"{workflow_id} is still waiting after {timeout}s")


def still_waiting(workflow_id: str, seconds: float = 1.0) -> None:
    time.sleep(seconds)
    status = DBOS.get_workflow_status(workflow_id)
    assert status is not None
    assert status.status == "PENDING"


def command(
    spec: StoreSpec, *arguments: str, dbos: str | None = None, dbos_env: str | None = None
) -> tuple[int, str, str]:
    """Run the real ``stageware policy ...`` command, as the OS account running the tests;
    given the DBOS system database with ``--dbos`` (*dbos*) or ``STAGEWARE_DBOS_URL``."""
    store = (
        ["--store", f"sqlite:///{spec.target}"]
        if spec.kind == "sqlite"
        else ["--store", spec.target, "--schema", spec.schema]
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"STAGEWARE_APPROVAL_AUTHENTICATOR", "STAGEWARE_DBOS_URL"}
    }
    where = [] if dbos is None else ["--dbos", dbos, "--dbos-schema", SCHEMA]
    if dbos_env is not None:
        env["STAGEWARE_DBOS_URL"] = dbos_env
        env["STAGEWARE_DBOS_SCHEMA"] = SCHEMA
    action, *rest = arguments
    done = subprocess.run(
        [STAGEWARE, "policy", action, *store, *rest, *where],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def test_an_approval_from_the_command_line_in_another_process_finishes_the_run_once(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec, system_database: str
) -> None:
    workflow_id = start(setup, "approve-1")
    approval = pending_approval(shared_spec, "approve-1")
    still_waiting(workflow_id, 0.5)
    assert lines(setup["ledger"]) == []

    status, out, err = command(
        shared_spec, "approvals", "--approve", approval, dbos=system_database
    )

    assert (status, err) == (0, "")
    assert out.rstrip().endswith(f"; woke {workflow_id}")
    assert settle(workflow_id)["text"] == "Refunded."
    assert lines(setup["ledger"]) == ["900"]
    assert lines(setup["log"]) == ["prompt", "continue"]
    # The same approval again finds nothing waiting; nothing runs twice.
    status, _, err = command(shared_spec, "approvals", "--approve", approval, dbos=system_database)
    assert status == 2
    assert "no session waits on an approval" in err
    assert lines(setup["ledger"]) == ["900"]


def test_a_denial_blocks_the_step(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec, system_database: str
) -> None:
    workflow_id = start(setup, "deny-1", refund_in_place)
    approval = pending_approval(shared_spec, "deny-1")

    status, out, err = command(
        shared_spec, "approvals", "--deny", approval, dbos_env=system_database
    )

    assert (status, err) == (0, "")
    assert out.rstrip().endswith(f"; woke {workflow_id}")
    assert settle(workflow_id)["stop_reason"] == "blocked"
    assert lines(setup["ledger"]) == []


def test_a_forged_wake_up_releases_nothing(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec, system_database: str
) -> None:
    workflow_id = start(setup, "forged-1")
    approval = pending_approval(shared_spec, "forged-1")
    deadline = time.monotonic() + 10
    while checks(workflow_id) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    before = checks(workflow_id)

    # Anyone who can reach DBOS's database can send one; it carries no answer.
    assert wake("forged-1", system_database_url=system_database, system_schema=SCHEMA) == [
        workflow_id
    ]

    deadline = time.monotonic() + 10
    while checks(workflow_id) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert checks(workflow_id) == before + 1  # woken: it read the session again
    still_waiting(workflow_id)
    assert lines(setup["ledger"]) == []
    assert lines(setup["log"]) == ["prompt"]

    assert command(shared_spec, "approvals", "--approve", approval, dbos=system_database)[0] == 0
    assert settle(workflow_id)["text"] == "Refunded."
    assert lines(setup["ledger"]) == ["900"]


def test_an_answer_stored_without_a_wake_up_is_found_by_the_re_check(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec
) -> None:
    setup["recheck"] = 1.0
    workflow_id = start(setup, "recheck-1")
    approval = pending_approval(shared_spec, "recheck-1")

    status, out, _ = command(shared_spec, "approvals", "--approve", approval)  # no --dbos

    assert status == 0
    assert "woke" not in out
    # Generous, for a loaded machine: how long the run waited between its reads of the
    # session is checked on DBOS's own records of each wait, below.
    assert settle(workflow_id, timeout=120)["text"] == "Refunded."
    assert lines(setup["ledger"]) == ["900"]
    waits = [
        (step["completed_at_epoch_ms"] or 0) - (step["started_at_epoch_ms"] or 0)
        for step in DBOS.list_workflow_steps(workflow_id)
        if step["function_name"] == "DBOS.recv"
    ]
    # Each wait ended at the 1 s re-check (no message came), not at RECHECK_SECONDS (60 s)
    # as a wait that ignored its setting would have.
    assert waits, "the run never waited"
    assert all(0 < wait < 30_000 for wait in waits), waits


@pytest.mark.parametrize("then", ["block", "escalate"])
def test_a_timeout_becomes_what_the_policy_declared(
    launch: Launch,
    setup: dict[str, Any],
    shared_spec: StoreSpec,
    system_database: str,
    then: str,
) -> None:
    setup |= {"timeout": "1s", "on_timeout": then}
    session_id = f"timeout-{then}"
    workflow_id = start(setup, session_id)
    pending_approval(shared_spec, session_id)

    if then == "block":
        # No wake-up, no re-check in time: the wait ends at the deadline.
        assert settle(workflow_id)["stop_reason"] == "blocked"
        assert lines(setup["ledger"]) == []
        return
    store = open_store(shared_spec)
    try:
        deadline = time.monotonic() + 30
        while (escalation := store.open_escalation(session_id)) is None:
            assert time.monotonic() < deadline, "the run never escalated"
            time.sleep(0.05)
    finally:
        close_store(store)
    assert escalation.reason == "refund approval expired"
    still_waiting(workflow_id)  # until a human resolves the escalation

    status, out, err = command(
        shared_spec,
        "escalations",
        "--resolve",
        escalation.id,
        "--resolution",
        "refunded by hand",
        dbos=system_database,
    )

    assert (status, err) == (0, ""), err
    assert out.rstrip().endswith(f"; woke {workflow_id}")
    assert settle(workflow_id)["stop_reason"] == "escalated"
    assert lines(setup["ledger"]) == []


def test_the_wait_survives_a_worker_killed_while_it_waits(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec, system_database: str
) -> None:
    """The worker is SIGKILLed mid-wait; DBOS launched again as the same executor (here,
    in the test's process) recovers the workflow, which waits on and finishes once."""
    workflow_id = f"stageware:{KIND}:restart-1:{uuid.uuid4().hex}"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.dbos.waits_worker",
            system_database,
            WORKER,
            workflow_id,
            json.dumps(setup),
            "restart-1",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        approval = pending_approval(shared_spec, "restart-1")
        deadline = time.monotonic() + 10
        while checks(workflow_id) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert checks(workflow_id) == 1  # waiting in DBOS.recv
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=30)
    status = DBOS.get_workflow_status(workflow_id)
    assert status is not None
    assert status.status == "PENDING"

    launch(WORKER)  # the same executor id: recovery runs the workflow again, here
    # Woken whether the recovered request is still ENQUEUED or already waits again.
    status_, out, err = command(
        shared_spec, "approvals", "--approve", approval, dbos=system_database
    )
    assert (status_, err) == (0, "")
    assert out.rstrip().endswith(f"; woke {workflow_id}")

    assert settle(workflow_id)["text"] == "Refunded."
    assert lines(setup["ledger"]) == ["900"]
    # The first invocation's step was handed back on the replay, not run again.
    assert lines(setup["log"]) == ["prompt", "continue"]


def test_wake_finds_the_requests_of_one_session_whatever_the_agent_kind() -> None:
    tail = "0123456789abcdef" * 2
    ids = [
        f"stageware:refunds:c1:{tail}",
        f"stageware:support:c1:{tail}",
        f"stageware:refunds:c1:{tail}/2",  # an invocation the request runs
        f"stageware:refunds:c10:{tail}",
        f"stageware:refunds:x:c1:{tail}",  # session "x:c1"
        "stageware:refunds:c1",
        f"other:refunds:c1:{tail}",
    ]
    assert waiting_on("c1", ids) == ids[:2]
    assert waiting_on("x:c1", ids) == [ids[4]]


def test_the_readme_wake_example_wakes_the_waiting_run(
    launch: Launch, setup: dict[str, Any], shared_spec: StoreSpec, system_database: str
) -> None:
    code = readme_blocks("### Waiting for a human on DBOS")[0]
    workflow_id = start(setup, "c1")
    approval = pending_approval(shared_spec, "c1")
    assert command(shared_spec, "approvals", "--approve", approval)[0] == 0  # no wake-up

    namespace: dict[str, Any] = {}
    code = code.replace("postgresql://app@db/shop", system_database)
    code = code.replace('system_schema="dbos"', f"system_schema={SCHEMA!r}")
    exec(compile(code, page_of("### Waiting for a human on DBOS"), "exec"), namespace)

    assert namespace["woken"] == [workflow_id]
    assert settle(workflow_id)["text"] == "Refunded."
    assert lines(setup["ledger"]) == ["900"]


def test_a_wait_outlives_a_restart_of_the_database(
    private_postgres: PrivateServer, tmp_path: Path
) -> None:
    """The server holding the sessions and DBOS's tables restarts while the run waits:
    every connection ends; the run waits on, and the approval given after finishes it."""
    spec = StoreSpec("postgres", private_postgres.url, fresh_schema_name())
    setup: dict[str, Any] = {
        "spec": spec.to_json(),
        "ledger": str(tmp_path / "ledger.txt"),
        "log": str(tmp_path / "invocations.txt"),
        "timeout": None,
        "on_timeout": None,
        "recheck": 1.0,  # so that the run reads the session again after the restart
    }
    for database in _system_database(spec, tmp_path):
        DBOS.destroy()
        config: DBOSConfig = {
            "name": "stageware-waits",
            "system_database_url": database,
            "executor_id": EXECUTOR,
            "dbos_system_schema": SCHEMA,
            "application_version": APP_VERSION,
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            workflow_id = start(setup, "outage-1")
            approval = pending_approval(spec, "outage-1")
            before = checks(workflow_id)

            private_postgres.restart()
            # Two more reads of the session, across the restart.
            deadline = time.monotonic() + 30
            while checks(workflow_id) < before + 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert checks(workflow_id) >= before + 2
            still_waiting(workflow_id, 0.1)
            status, _, err = command(spec, "approvals", "--approve", approval, dbos=database)
            assert (status, err) == (0, "")

            assert settle(workflow_id)["text"] == "Refunded."
            assert lines(setup["ledger"]) == ["900"]
            assert lines(setup["log"]) == ["prompt", "continue"]
        finally:
            DBOS.destroy()
