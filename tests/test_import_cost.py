"""What importing stageware loads and builds, kept small by these tests.

Importing the agent must not import pydantic or asyncio (the first is needed when a tool
is built or a snapshot checked, the second when the agent runs on asyncio), and importing
the policy layer must not build the hook events' validators. Each check runs in a fresh
interpreter. How long the import takes is measured by a benchmark
(``python -m tests.benchmarks.import_time``), never by a test.
"""

from __future__ import annotations

import json
import subprocess
import sys


def _run(code: str) -> object:
    """Run *code* in a fresh interpreter; return the JSON it printed last."""
    completed = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    result: object = json.loads(completed.stdout.splitlines()[-1])
    return result


# What the interpreter had loaded before the import, which the import is not to blame for
# (a .pth file of some package may import asyncio or importlib.metadata at startup).
_BEFORE = "import json, sys\nbefore = set(sys.modules)\n"


def test_importing_the_agent_loads_neither_pydantic_nor_asyncio() -> None:
    code = _BEFORE + (
        "from stageware import Agent, MemorySessionStore, ScriptedModel, SQLiteSessionStore, tool\n"
        "heavy = {'pydantic', 'asyncio', 'importlib.metadata'}\n"
        "print(json.dumps(sorted(heavy & set(sys.modules) - before)))"
    )
    assert _run(code) == []


def test_importing_stageware_loads_no_durable_execution_engine() -> None:
    # DBOS is the dbos extra's: only stageware.dbos imports it.
    code = _BEFORE + (
        "import stageware\n"
        "from stageware import Agent, SQLiteSessionStore\n"
        "loaded = set(sys.modules) - before\n"
        "print(json.dumps(sorted(m for m in loaded if m.partition('.')[0] in {'dbos', 'sqlalchemy'}"
        " or m.startswith('stageware._dbos'))))"
    )
    assert _run(code) == []


def test_the_ready_made_middleware_costs_no_more_to_import_than_the_agent() -> None:
    # Measured against the agent's own import, which the middleware is used with.
    code = _BEFORE + (
        "from stageware import Agent\n"
        "agent = set(sys.modules)\n"
        "from stageware.middleware import ModelFallback\n"
        "heavy = {'pydantic', 'asyncio', 'importlib.metadata'}\n"
        "print(json.dumps(sorted(heavy & set(sys.modules) - agent)))"
    )
    assert _run(code) == []


def test_importing_the_policy_layer_builds_no_hook_event_validator() -> None:
    code = _BEFORE + (
        "from stageware.policy import HOOK_POINTS, RunStartEvent\n"
        "events = [spec.event for spec in HOOK_POINTS.values()]\n"
        "built = [event.__name__ for event in events if event.__pydantic_complete__]\n"
        "plugins = 'importlib.metadata' in set(sys.modules) - before\n"
        "RunStartEvent(run_id='r', agent_name='a')\n"
        "print(json.dumps([built, plugins, RunStartEvent.__pydantic_complete__]))"
    )
    # Built on first use: the event validates when it is used.
    assert _run(code) == [[], False, True]


def test_a_bad_hook_event_is_still_refused_on_first_use() -> None:
    code = (
        "import json\n"
        "from pydantic import ValidationError\n"
        "from stageware.policy import ToolCallEvent\n"
        "try:\n"
        "    ToolCallEvent(run_id='r', tool_name=1, tool_use_id='t', input={}, extra=2)\n"
        "except ValidationError as exc:\n"
        "    print(json.dumps(sorted(str(e['loc'][0]) for e in exc.errors())))"
    )
    assert _run(code) == ["extra", "tool_name"]
