"""A worker process for tests/dbos/test_liveness.py: DBOS on PostgreSQL, with a liveness lock.

    python -m tests.dbos.liveness_worker CONFIG_JSON serve
    python -m tests.dbos.liveness_worker CONFIG_JSON start WORKFLOW_ID

It launches DBOS with ``stageware.dbos.launch``, which on PostgreSQL holds the executor
id's liveness lock and starts the watcher that recovers dead workers' workflows. ``start``
also starts one workflow, which records a first step, waits for a message on the topic
``go`` and records a second step: each step writes one row to the test's ledger (who ran
which step), so the test can count runs. It prints ``ready`` when launched and runs until
it is killed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import psycopg
from dbos import DBOS, DBOSConfig, SetWorkflowID
from psycopg import sql

from stageware.dbos import launch

_config: dict[str, Any] = {}


@DBOS.step()
async def record(step: str) -> None:
    """One row in the ledger: this step of this workflow ran on this executor."""
    with psycopg.connect(_config["url"], autocommit=True) as connection:
        connection.execute(
            sql.SQL(
                "INSERT INTO {}.ledger (workflow_id, step, executor_id) VALUES (%s, %s, %s)"
            ).format(sql.Identifier(_config["ledger_schema"])),
            (DBOS.workflow_id, step, DBOS.executor_id),
        )


@DBOS.workflow()
async def waiting_workflow() -> None:
    await record("first")
    await DBOS.recv_async("go", timeout_seconds=120)
    await record("second")


async def main(config: dict[str, Any], command: list[str]) -> None:
    _config.update(config)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    dbos_config: DBOSConfig = {
        "dbos_system_schema": config["schema"],
        "application_version": "liveness-test",
        "notification_listener_polling_interval_sec": 0.1,
    }
    launch(
        name=config["app"],
        database_url=config["url"],
        executor_id=config["executor_id"],
        config=dbos_config,
        watch_seconds=config["watch_seconds"],
    )
    if command[0] == "start":
        with SetWorkflowID(command[1]):
            await DBOS.start_workflow_async(waiting_workflow)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2:]))
