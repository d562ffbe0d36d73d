"""The agents guide's MCP example runs as written, against the test server over stdio."""

from __future__ import annotations

import sys

import pytest

from tests.readme import first_block, page_of

from .mcp_servers.servers import SERVER


def _example() -> str:
    return first_block("### MCP servers' tools")


def test_the_mcp_example_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    code = _example()
    command = 'MCPClient.stdio("python", ["weather_server.py"]'
    assert command in code
    code = code.replace(command, f"MCPClient.stdio({sys.executable!r}, [{str(SERVER)!r}]")

    exec(compile(code, page_of("### MCP servers' tools"), "exec"), {})

    expected = code.rsplit("# ", 1)[1].strip()
    assert capsys.readouterr().out.strip() == expected
