"""The approval a durable run waits on, read from its session as the command line reads it."""

from __future__ import annotations

import time

from stageware import SessionStore
from tests.host.sessions.stores import StoreSpec, close_store, open_store


def pending_approval(
    store: SessionStore | StoreSpec, session_id: str, timeout: float = 30.0
) -> str:
    """The id of the approval *session_id* waits on, once the run has suspended and
    released the session (the command refuses to answer a session a worker holds).

    *store* is the session store, or the spec of one to open (and close) for the look.
    """
    opened = open_store(store) if isinstance(store, StoreSpec) else store
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stored = opened.load(session_id)
            if stored is not None and stored.lease is None:
                state = stored.snapshot["interrupt_state"]
                waiting = [i["id"] for i in state.get("interrupts", []) if i["response"] is None]
                if waiting:
                    return str(waiting[0])
            time.sleep(0.05)
    finally:
        if opened is not store:
            close_store(opened)
    raise AssertionError(f"session {session_id!r} never suspended within {timeout}s")
