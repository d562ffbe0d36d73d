"""The crash tests' side of ``crash_worker``: databases, worker processes, the approval, checks.

Each test gets a database of its own on the test server (sessions, ledger and DBOS's
system tables all in it), so tests never see each other's workflows. Workers are real
processes; the approval is given by the real ``stageware policy approvals`` command, once.

``violations(...)`` lists what a finished run got wrong against the uninterrupted
reference: a tool run other than once, a history that differs or pairs its tool calls
badly, an approval left unanswered or answered again, a workflow that did not succeed.
The kill tests assert it is empty; the test with the journal removed asserts it is not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Final, cast

from stageware import StoredSession
from tests.ci import skip_or_fail
from tests.host.sessions.stores import close_store, fresh_database

from .crash_worker import ANSWER, KIND, PROMPT, Ledger, WorkerConfig, open_sessions, requests

ROOT: Final = Path(__file__).resolve().parents[2]
POSTGRES_URL_VARIABLE: Final = "STAGEWARE_TEST_POSTGRES_URL"
BOUND: Final = 60.0
"""How long a test waits for a worker or a workflow: far past what any of them takes."""


def server_url() -> str:
    """The test server's URL; without it, skip (fail when ``CI`` is set)."""
    url = os.environ.get(POSTGRES_URL_VARIABLE)
    if not url:
        message = (
            f"the crash tests need a PostgreSQL server: set {POSTGRES_URL_VARIABLE}, or run "
            ".ci/postgres run python -m pytest tests/dbos"
        )
        skip_or_fail(message)
    return url


def postgres_config(database: str, session: str, **changes: Any) -> WorkerConfig:
    """A worker's config on one test database: DBOS, sessions and ledger all in it."""
    config = WorkerConfig(
        job="run",
        database=database,
        sessions=database,
        ledger=database,
        app=f"crash_{uuid.uuid4().hex[:8]}",
        session=session,
        schema="sessions",
    )
    return replace(config, **changes)


# Worker processes.


@dataclass
class Worker:
    """A running ``crash_worker`` process."""

    config: WorkerConfig
    process: subprocess.Popen[str]
    errors: IO[str]

    @classmethod
    def start(cls, config: WorkerConfig, log: Path) -> Worker:
        errors = log.open("w")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.dbos.crash_worker", config.to_json()],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        return cls(config, process, errors)

    def _log(self) -> str:
        self.errors.flush()
        return Path(self.errors.name).read_text()[-4000:]

    def killed(self, timeout: float = BOUND) -> None:
        """Wait for the worker to die by its own SIGKILL."""
        status = self.process.wait(timeout)
        assert status == -signal.SIGKILL, f"the worker was not killed ({status}):\n{self._log()}"

    def result(self, timeout: float = BOUND) -> dict[str, Any]:
        """The last JSON line the worker printed, once it exited on its own."""
        stdout, _ = self.process.communicate(timeout=timeout)
        assert self.process.returncode == 0, (
            f"the worker failed ({self.process.returncode}):\n{self._log()}"
        )
        found: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
        return found

    def ready(self, timeout: float = BOUND) -> None:
        """Wait for a serving worker's ``ready`` line (DBOS launched)."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the worker ended before it was ready:\n{self._log()}"
        assert json.loads(line).get("ready"), line

    def stop(self) -> None:
        """End a serving worker: close its input; kill it if it does not go."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.errors.close()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(BOUND)


@contextlib.contextmanager
def workers() -> Generator[list[Worker]]:
    """Workers the test starts; every one still running is ended afterwards."""
    started: list[Worker] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.stop()


# The session, the approval and the workflow, as the test reads them.


def load_session(config: WorkerConfig) -> StoredSession | None:
    store = open_sessions(config)
    try:
        return store.load(config.session)
    finally:
        close_store(store)


def unanswered(stored: StoredSession | None) -> list[str]:
    """The policy approvals the stored session waits on."""
    if stored is None:
        return []
    interrupts: list[dict[str, Any]] = stored.snapshot["interrupt_state"].get("interrupts") or []
    return [
        str(i["id"])
        for i in interrupts
        if str(i["id"]).startswith("v2:policy:") and i.get("response") is None
    ]


def wait_for_approval(config: WorkerConfig, timeout: float = BOUND) -> str:
    """The id of the approval the run waits on, once its invocation released the session."""
    deadline = time.monotonic() + timeout
    store = open_sessions(config)
    try:
        while time.monotonic() < deadline:
            stored = store.load(config.session)
            waiting = unanswered(stored)
            if stored is not None and waiting and stored.lease is None:
                assert len(waiting) == 1, waiting
                return waiting[0]
            time.sleep(0.1)
    finally:
        close_store(store)
    raise AssertionError(f"the run of {config.session!r} never waited for its approval")


def approvals_command(config: WorkerConfig, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``stageware policy approvals`` on the test's store, waking the workflow through DBOS."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "stageware_codegen.cli",
            "policy",
            "approvals",
            "--store",
            config.sessions,
            *(["--schema", config.schema] if config.sessions.startswith("postgres") else []),
            "--dbos",
            config.database,
            "--session",
            config.session,
            *arguments,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )


def approve(config: WorkerConfig, interrupt_id: str) -> None:
    """Approve once, from the command line, as the operating-system account."""
    answered = approvals_command(config, "--approve", interrupt_id, "--comment", "once")
    assert answered.returncode == 0, answered.stderr
    # Whether it woke a waiting run shows in pytest's output of a test that failed or lingered.
    print(f"{time.strftime('%H:%M:%S')} {answered.stdout.strip()}")


def approve_when_waiting(config: WorkerConfig) -> str:
    interrupt_id = wait_for_approval(config)
    approve(config, interrupt_id)
    return interrupt_id


def workflow_status(config: WorkerConfig, timeout: float = BOUND) -> Any:
    """The session's workflow's DBOS status, once it ended (``SUCCESS``, ``ERROR``...)."""
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=config.database, application_name=config.app)
    try:
        prefix = f"stageware:{KIND}:{config.session}:"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = client.list_workflows(workflow_id_prefix=prefix)
            found = [w for w in listed if w.workflow_id in requests(listed)]
            assert len(found) <= 1, [w.workflow_id for w in found]
            if found and found[0].status not in ("PENDING", "ENQUEUED"):
                return found[0]
            time.sleep(0.2)
        raise AssertionError(f"the workflow of {config.session!r} did not end in {timeout} s")
    finally:
        client.destroy()


def messages(stored: StoredSession | None) -> list[Any]:
    assert stored is not None, "the session is gone"
    return list(stored.snapshot["messages"])


def fields(result: object) -> dict[str, Any]:
    """A ``DurableResult``'s fields, as DBOS hands the workflow's output back."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    if isinstance(result, dict):
        return cast("dict[str, Any]", result)
    return dict(vars(result))


def pairing_errors(history: list[Any]) -> list[str]:
    """Where the history breaks the toolUse / toolResult pairing."""
    errors: list[str] = []
    for index, message in enumerate(history):
        calls = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        if not calls:
            continue
        following = history[index + 1] if index + 1 < len(history) else None
        answered = (
            []
            if following is None
            else [b["toolResult"]["toolUseId"] for b in following["content"] if "toolResult" in b]
        )
        if sorted(answered) != sorted(calls):
            errors.append(f"message {index} calls {calls}, the next answers {answered}")
    return errors


def violations(
    config: WorkerConfig, reference: list[Any], interrupt_id: str, status: Any
) -> list[str]:
    """What the finished run got wrong; empty when each guarantee held."""
    found: list[str] = []
    runs: dict[str, int] = {}
    for tool_use_id, _, _ in Ledger(config.ledger).rows(config.session):
        runs[tool_use_id] = runs.get(tool_use_id, 0) + 1
    if runs != {"t1": 1, "t2": 1, "t3": 1}:
        found.append(f"each tool should run once, the ledger says {runs}")
    stored = load_session(config)
    if stored is None:
        return [*found, "the session is gone"]
    history = messages(stored)
    if history != reference:
        found.append(
            "the history differs from the reference run's:\n" + json.dumps(history, indent=1)[:3000]
        )
    found.extend(pairing_errors(history))
    if stored.lease is not None:
        found.append(f"the session is still leased: {stored.lease}")
    if unanswered(stored):
        found.append(f"approvals still wait: {unanswered(stored)}")
    # Given again once the run is over, the answer finds nothing waiting for it.
    again = approvals_command(config, "--approve", interrupt_id)
    if again.returncode != 2 or "lists those that do" not in again.stderr:
        found.append(f"a second approval was not refused: {again.stdout}{again.stderr}")
    if status.status != "SUCCESS":
        found.append(f"the workflow ended {status.status}: {status.error}")
    elif status.output is not None:
        output = fields(status.output)
        if output.get("text") != ANSWER or output.get("stop_reason") != "end_turn":
            found.append(f"the workflow's result is {output}")
    return found


def reference_history(database_server: str, log: Path) -> list[Any]:
    """The history of an uninterrupted run, with its approval given once."""
    with fresh_database(database_server) as database:
        config = postgres_config(database, "reference")
        Ledger(config.ledger).create()
        with workers() as started:
            started.append(worker := Worker.start(config, log))
            approve_when_waiting(config)
            result = worker.result()
        assert result["text"] == ANSWER, result
        history = messages(load_session(config))
    assert history[0]["content"][0]["text"] == PROMPT
    assert not pairing_errors(history)
    return history
