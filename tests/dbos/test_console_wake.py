"""An approval given in the console wakes the durable run waiting on it, which goes on.

The run waits in its DBOS workflow (re-reading its session only every ``RECHECK_SECONDS``,
a minute); the console, given the DBOS system database, stores the answer and then sends
the wake-up, so the run finishes within seconds, and the refund runs once.
"""

from __future__ import annotations

import time
from urllib.parse import quote

from dbos import DBOS, WorkflowHandle
from starlette.testclient import TestClient

from stageware._dbos._waits import RECHECK_SECONDS
from stageware.console import LocalAuthenticator, create_app
from stageware.dbos import DurableResult
from tests.console.desk import form_fields

from .kinds import Setup, approved
from .pending import pending_approval


def test_an_approval_in_the_console_wakes_the_waiting_run(durable: Setup) -> None:
    handle: WorkflowHandle[DurableResult] = approved.start("refund me", session_id="k1")
    assert durable.store is not None
    approval = pending_approval(durable.store, "k1")
    app = create_app(
        durable.store,
        authenticator=LocalAuthenticator("manager"),
        dbos_url=durable.dbos_url,
    )
    # Local mode answers only this machine's names (not TestClient's "testserver").
    browser = TestClient(
        app, base_url="http://127.0.0.1:8400", client=("127.0.0.1", 50000), follow_redirects=False
    )
    page = f"/approvals/k1/{quote(approval, safe='')}"
    fields = form_fields(browser.get(page).text, "answer")
    assert fields is not None
    started = time.monotonic()

    answered = browser.post("/approvals/answer", data={**fields, "decision": "approve"})

    assert answered.status_code == 303
    deadline = started + RECHECK_SECONDS / 2
    while (status := DBOS.get_workflow_status(handle.workflow_id)) is not None and (
        status.status == "PENDING"
    ):
        assert time.monotonic() < deadline, "the run was not woken"
        time.sleep(0.05)
    result = handle.get_result()
    assert (result.stop_reason, result.text) == ("end_turn", "Refunded 30 EUR.")
    assert durable.tool_runs() == ["refund:30"]
    entry = durable.store.approval("k1", approval)
    assert entry is not None
    assert (entry.status, entry.answered_by, entry.via) == ("approved", "manager", "console-local")
