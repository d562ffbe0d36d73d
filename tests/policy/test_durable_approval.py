"""A Suspend survives a process restart and its approval runs the step exactly once.

The run that suspends and the runs that resume it are separate OS processes
(``policy_worker.py``) sharing one session in SQLite or Postgres. Two workers resume
the same approval at the same moment: the session's claim lets one of them run the step.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.host.sessions.stores import StoreSpec, close_store, open_store

from .policy_worker import SESSION

ROOT = Path(__file__).resolve().parents[2]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.policy.policy_worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, f"worker failed ({process.returncode}):\n{err}"
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


def test_two_workers_approving_one_suspended_refund_pay_it_once(
    shared_spec: StoreSpec, tmp_path: Path
) -> None:
    spec, ledger, go = shared_spec.to_json(), tmp_path / "ledger.txt", tmp_path / "go"
    asked = _finish(_start("ask", spec, str(ledger)))
    assert asked["stop_reason"] == "interrupt"
    interrupt_id = asked["interrupt_id"]
    assert interrupt_id.startswith("v2:policy:tool.before:large_refunds_need_approval:t1#")
    assert not ledger.exists()  # suspended: nothing was paid

    # The asking process is gone; the interrupt lives on in the store.
    store = open_store(shared_spec)
    try:
        stored = store.load(SESSION)
    finally:
        close_store(store)
    assert stored is not None
    assert [i["id"] for i in stored.snapshot["interrupt_state"]["interrupts"]] == [interrupt_id]

    ready = [tmp_path / f"ready-{n}" for n in range(2)]
    workers = [
        _start("approve", spec, str(ledger), interrupt_id, str(flag), str(go)) for flag in ready
    ]
    deadline = time.monotonic() + 60
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    reports = [_finish(worker) for worker in workers]

    assert len(ledger.read_text().splitlines()) == 1, ledger.read_text()
    assert sorted(r["ok"] for r in reports) == [False, True]
    winner = next(r for r in reports if r["ok"])
    assert winner["stop_reason"] == "end_turn"
    loser = next(r for r in reports if not r["ok"])
    assert loser["error"] in {"SessionConflictError", "SessionLeasedError"}
