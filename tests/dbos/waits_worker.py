"""A worker process for the restart test: launches DBOS, starts one waiting refund run,
and keeps running until it is killed.

``python -m tests.dbos.waits_worker SYSTEM_DATABASE EXECUTOR WORKFLOW_ID SETUP SESSION``
"""

from __future__ import annotations

import sys
import time

from dbos import DBOS, DBOSConfig, SetWorkflowID

from .waits_flow import APP_VERSION, refund_until_answered


def main(system_database: str, executor: str, workflow_id: str, setup: str, session: str) -> None:
    config: DBOSConfig = {
        "name": "stageware-waits",
        "system_database_url": system_database,
        "executor_id": executor,
        "dbos_system_schema": "waits_dbos",  # as the tests launch it
        "notification_listener_polling_interval_sec": 0.05,
        # Fixed: DBOS derives a version from the workflows a process registered and
        # recovers only its own version's; the worker and the tests register different sets.
        "application_version": APP_VERSION,
    }
    DBOS(config=config)
    DBOS.launch()
    with SetWorkflowID(workflow_id):
        DBOS.start_workflow(refund_until_answered, setup, session)
    print("started", flush=True)
    while True:  # until SIGKILL: the workflow runs on DBOS's threads
        time.sleep(1)


if __name__ == "__main__":
    main(*sys.argv[1:6])
