"""A worker process of ``durable_scaling``: one DBOS executor serving the benchmark's queue.

``python -m tests.benchmarks._durable_worker DATABASE_URL APP`` registers the durable
agent ``bench`` (one invocation: a model turn that calls ``lookup``, its 2 KB result, a
final answer; sessions in the same database, schema ``stageware``), launches DBOS on the
benchmark's database under the application name *APP*, prints ``ready`` and serves the
application's queues (the benchmark registers and configures them) until its standard
input closes.
"""

from __future__ import annotations

import sys
from typing import Final

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.postgres import PostgresSessionStore
from tests.benchmarks._conversation import TOOL_RESULT

AGENT_KIND: Final = "bench"
SESSION_SCHEMA: Final = "stageware"


@tool
def lookup(query: str) -> str:
    """Look the query up.

    Args:
        query: What to look up.
    """
    return TOOL_RESULT


def script() -> ScriptedModel:
    """One invocation's model: a turn that calls ``lookup``, then the answer."""
    call = ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"query": "q"})])
    return ScriptedModel([call, "done"])


def main() -> None:
    from stageware.dbos import DurableAgent, launch, shutdown

    url, app = sys.argv[1:3]
    # A bound of 5 s per store call, not 1: the benchmark saturates its machine on purpose,
    # and a save that waited its turn past 1 s would end its request with an error.
    store = PostgresSessionStore(url, schema=SESSION_SCHEMA, statement_timeout=5.0)

    def build(session_id: str) -> Agent:
        return Agent(script(), tools=[lookup], session_store=store, session_id=session_id)

    DurableAgent(AGENT_KIND, build)
    launch(name=app, database_url=url, config={"log_level": "WARNING"})
    print("ready", flush=True)
    sys.stdin.read()  # until the benchmark closes the pipe
    shutdown()
    store.close()


if __name__ == "__main__":
    main()
