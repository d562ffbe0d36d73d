"""A policy governs an MCP server's tool like any other: a Suspend survives a restart.

The run that suspends and the run that resumes are separate OS processes, each with its
own MCP client and so its own server process, sharing one SQLite session. The server
records every call: the approved call runs exactly once, in the second process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .mcp_servers.servers import records

ROOT = Path(__file__).resolve().parents[2]


def _worker(*args: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "tests.host.mcp_policy_worker", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


def test_a_suspended_mcp_call_resumes_after_a_restart_and_runs_once(tmp_path: Path) -> None:
    db, record = str(tmp_path / "sessions.db"), tmp_path / "record"
    record.mkdir()

    asked = _worker("ask", db, str(record))

    assert asked["stop_reason"] == "interrupt"
    assert asked["id"].startswith("v2:policy:tool.before:large_sums_need_approval:t1#")
    assert records(record, "call") == []  # suspended before the server saw it

    resumed = _worker("approve", db, str(record), asked["id"])

    assert resumed["stop_reason"] == "end_turn"
    assert resumed["text"] == "501."
    assert resumed["results"] == [
        {
            "toolUseId": "t1",
            "status": "success",
            "content": [{"json": {"result": 501}}, {"text": "501"}],
        }
    ]
    assert records(record, "call") == ["add 500 1"]
