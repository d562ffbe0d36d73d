"""A worker process for the multi-process store tests (test_processes.py).

    python -m tests.host.sessions.worker SPEC COMMAND ARGS...

It opens a store on the database *SPEC* names (``StoreSpec`` as JSON), prints ``ready``,
waits for a line on its standard input so that all workers start at once, then runs
*COMMAND* and prints one JSON line with what happened:

* ``increment SESSION COUNT NAME``: add 1 to the session's counter COUNT times, each by
  load, modify, conditional save, retrying on ``SessionConflictError``; the counter's log
  gets ``NAME:i`` for each increment. Prints the number of conflicts.
* ``claim SESSIONS VERSION OWNER``: for each session (comma-separated), claim it with a
  save at VERSION that takes a 30 s lease. Prints ``won`` or ``conflict`` for each.
* ``hold SESSION VERSION OWNER LEASE``: claim the session with a LEASE-second lease, print
  the lease, then sleep until killed.
* ``claim-escalations IDS OWNER``: claim each escalation (comma-separated ids) as OWNER.
  Prints ``won`` or ``refused`` for each.
"""

from __future__ import annotations

import json
import sys
import time

from stageware._host.sessions import EscalationError, SessionConflictError, SessionStore

from .stores import StoreSpec, close_store, counter_snapshot, open_store


def increment(store: SessionStore, session_id: str, count: int, name: str) -> dict[str, object]:
    conflicts = 0
    for index in range(count):
        while True:
            loaded = store.load(session_id)
            assert loaded is not None
            state = loaded.snapshot["state"]
            changed = counter_snapshot(state["count"] + 1, [*state["log"], f"{name}:{index}"])
            try:
                store.save(
                    session_id,
                    changed,
                    expected_version=loaded.version,
                    owner=name,
                    lease_seconds=None,
                )
                break
            except SessionConflictError:
                conflicts += 1
    return {"conflicts": conflicts}


def claim(store: SessionStore, session_ids: str, version: int, owner: str) -> dict[str, object]:
    results: list[str] = []
    for session_id in session_ids.split(","):
        try:
            store.save(
                session_id,
                counter_snapshot(0, [owner]),
                expected_version=version,
                owner=owner,
                lease_seconds=30,
            )
            results.append("won")
        except SessionConflictError:
            results.append("conflict")
    return {"results": results}


def hold(store: SessionStore, session_id: str, version: int, owner: str, lease: float) -> None:
    store.save(
        session_id,
        counter_snapshot(0, [owner]),
        expected_version=version,
        owner=owner,
        lease_seconds=lease,
    )
    print(json.dumps({"claimed": True}), flush=True)
    while True:
        time.sleep(60)


def claim_escalations(store: SessionStore, ids: str, owner: str) -> dict[str, object]:
    results: list[str] = []
    for escalation_id in ids.split(","):
        try:
            store.claim_escalation(escalation_id, by=owner)
            results.append("won")
        except EscalationError:
            results.append("refused")
    return {"results": results}


def main(argv: list[str]) -> None:
    spec_json, command, *args = argv
    store = open_store(StoreSpec.from_json(spec_json))
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        if command == "increment":
            result = increment(store, args[0], int(args[1]), args[2])
        elif command == "claim":
            result = claim(store, args[0], int(args[1]), args[2])
        elif command == "claim-escalations":
            result = claim_escalations(store, args[0], args[1])
        elif command == "hold":
            hold(store, args[0], int(args[1]), args[2], float(args[3]))
            return
        else:
            raise SystemExit(f"unknown command {command!r}")
    finally:
        close_store(store)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
