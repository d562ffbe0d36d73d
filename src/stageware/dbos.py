"""Durable agent runs on DBOS: each request a workflow, each model and tool call a step.

``DurableAgent`` registers an agent kind's workflows; ``launch`` starts DBOS in the
process (a system database on SQLite or PostgreSQL); a request then runs as a DBOS
workflow that a worker killed at any point resumes, on restart or on another worker,
without calling a model or running a tool again whose result was recorded. A run that
stops on approvals waits for them durably (``wait_for_answers``); ``wake`` makes a
waiting run look at its session again. It needs the ``dbos`` package:

```bash
pip install -e '.[dbos]'    # in a clone; the README's Install gives a git URL form
```

DBOS runs workflows on asyncio: use ``run_async`` and friends from asyncio code, never
from trio. See the guide "Durable runs on DBOS".
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._dbos._agent import AgentFactory, DurableAgent
    from stageware._dbos._client import enqueue_with_client, enqueue_with_client_async
    from stageware._dbos._durably import InvocationFailedError, run_durably
    from stageware._dbos._journal import DBOSJournal
    from stageware._dbos._launch import launch, shutdown
    from stageware._dbos._liveness import ExecutorIdInUseError, PooledConnectionError
    from stageware._dbos._result import DurableResult
    from stageware._dbos._waits import RECHECK_SECONDS, wait_for_answers
    from stageware._dbos._wake import WAKE_TOPIC, wake
    from stageware._host._journal_data import ReplayedError
except ModuleNotFoundError as _missing:
    # Only a missing dbos gets the install hint; any other missing module is a real bug.
    if _missing.name != "dbos":
        raise
    raise ImportError(
        f"stageware.dbos needs the 'dbos' package, from {_extras.needs_extra('dbos')}"
    ) from _missing

__all__ = [
    "RECHECK_SECONDS",
    "WAKE_TOPIC",
    "AgentFactory",
    "DBOSJournal",
    "DurableAgent",
    "DurableResult",
    "ExecutorIdInUseError",
    "InvocationFailedError",
    "PooledConnectionError",
    "ReplayedError",
    "enqueue_with_client",
    "enqueue_with_client_async",
    "launch",
    "run_durably",
    "shutdown",
    "wait_for_answers",
    "wake",
]
