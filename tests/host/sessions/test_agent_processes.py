"""Workers in separate OS processes share one session: no lost turn, no double payout.

Each worker is a real process (``agent_worker.py``) with its own agent and its own
connection to the same database (SQLite and Postgres), as behind a load balancer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from stageware import StoredSession

from .agent_worker import SESSION
from .stores import StoreSpec, load_stored

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def store_spec(shared_spec: StoreSpec) -> str:
    return shared_spec.to_json()


def load(spec: str) -> StoredSession:
    return load_stored(spec, SESSION)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.host.sessions.agent_worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"worker failed ({process.returncode}):\n{err}"
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


def run(*args: str) -> dict[str, Any]:
    return finish(start(*args))


def user_turns(stored: StoredSession) -> list[str]:
    return [
        block["text"]
        for message in stored.snapshot["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if "text" in block
    ]


def test_workers_appending_turns_lose_none_of_them(store_spec: str) -> None:
    texts = [f"turn {worker}.{n}" for worker in range(4) for n in range(3)]
    # Four processes at a time, each adding one turn, reloading and retrying on conflict.
    for batch in range(0, len(texts), 4):
        processes = [start("append", store_spec, text) for text in texts[batch : batch + 4]]
        for process in processes:
            assert finish(process)["ok"] is True

    turns = user_turns(load(store_spec))
    assert sorted(turns) == sorted(texts)
    assert len(turns) == len(set(turns))


def test_two_workers_resuming_one_interrupt_pay_out_once(store_spec: str, tmp_path: Path) -> None:
    ledger, go = tmp_path / "ledger.txt", tmp_path / "go"
    interrupt_id = run("ask", store_spec, str(ledger))["interrupt_id"]

    ready = [tmp_path / f"ready-{n}" for n in range(2)]
    workers = [
        start("resume", store_spec, str(ledger), interrupt_id, str(flag), str(go)) for flag in ready
    ]
    # Both have loaded the session while it waits for the answer; then both resume at once.
    deadline = time.monotonic() + 60
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    reports = [finish(worker) for worker in workers]

    assert len(ledger.read_text().splitlines()) == 1, ledger.read_text()
    assert sorted(r["ok"] for r in reports) == [False, True]
    loser = next(r for r in reports if not r["ok"])
    assert loser["error"] in {"SessionConflictError", "SessionLeasedError"}


def test_a_worker_killed_after_the_approved_tool_ran_does_not_pay_twice(
    store_spec: str, tmp_path: Path
) -> None:
    ledger, ready, go = tmp_path / "ledger.txt", tmp_path / "ready", tmp_path / "go"
    interrupt_id = run("ask", store_spec, str(ledger))["interrupt_id"]
    # The worker that takes over starts now and waits, so that its start-up does not
    # count against the lease it must find held.
    successor = start("continue", store_spec, str(ledger), str(ready), str(go))

    dying = start("resume-and-die", store_spec, str(ledger), interrupt_id)
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    assert len(ledger.read_text().splitlines()) == 1

    # The other worker waits out the dead one's lease and finishes the run; it neither asks
    # the human again nor runs the recorded refund a second time.
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    report = finish(successor)
    assert report == {
        "ok": True,
        "text": "Refunded after a restart.",
        "refused": report["refused"],
        "pending": 0,
    }
    assert report["refused"] > 0  # the lease held while it was live
    assert len(ledger.read_text().splitlines()) == 1
    assert load(store_spec).lease is None
