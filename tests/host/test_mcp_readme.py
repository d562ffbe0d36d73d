"""The README's MCP example runs as written, against the test server over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .mcp_servers.servers import SERVER

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### MCP servers' tools") :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_mcp_example_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    code = _example()
    command = 'MCPClient.stdio("python", ["weather_server.py"]'
    assert command in code
    code = code.replace(command, f"MCPClient.stdio({sys.executable!r}, [{str(SERVER)!r}]")

    exec(compile(code, str(README), "exec"), {})

    expected = code.rsplit("# ", 1)[1].strip()
    assert capsys.readouterr().out.strip() == expected
