"""An MCP client's lifetime: the server process is ours, and no call outlives its caller.

Exit closes the session and stops the subprocess however the block ends; a call cut
short by its caller (asyncio and trio) ends at once and the server is told; a server
that dies mid-call ends the call at once with an error result, never a hang.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn
from stageware.mcp import MCPClient, MCPConnectionError

from .mcp_servers.servers import SERVER, alive, http_server, records, stdio_client


def _call(name: str, **arguments: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments)])


def _result(agent: Agent, index: int = 0) -> dict[str, Any]:
    results = [
        block["toolResult"]
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]
    return dict(results[index])


def _server_pid(client: MCPClient) -> int:
    agent = Agent(ScriptedModel([_call("pid"), "ok"]), tools=[client])
    agent("pid?")
    pid: int = _result(agent)["content"][0]["json"]["result"]
    return pid


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_exit_stops_the_server_process_also_when_the_block_raises() -> None:
    with stdio_client() as client:
        pid = _server_pid(client)
        assert alive(pid)
    assert not alive(pid)  # stopped before the block returned
    assert repr(client).endswith(", closed)")

    pids: list[int] = []
    with pytest.raises(KeyError):
        _raise_inside(pids)
    assert pids
    assert not alive(pids[0])


def _raise_inside(pids: list[int]) -> None:
    with stdio_client() as client:
        pids.append(_server_pid(client))
        raise KeyError("boom")


@pytest.mark.anyio
async def test_async_with_a_cancelled_block_still_stops_the_server() -> None:
    client = stdio_client()
    pid = None
    with anyio.CancelScope() as scope:
        async with client:
            agent = Agent(ScriptedModel([_call("pid"), "ok"]), tools=[client])
            await agent.invoke_async("pid?")
            pid = _result(agent)["content"][0]["json"]["result"]
            scope.cancel()
            await anyio.sleep(5)
    assert scope.cancelled_caught
    assert pid is not None
    assert not alive(pid)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_cancelled_call_ends_at_once_and_the_server_is_told(
    transport: str, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        if transport == "stdio":
            client = stdio_client(record=tmp_path)
        else:
            url, _ = stack.enter_context(http_server(record=tmp_path))
            client = MCPClient.http(url)
        async with client:
            agent = Agent(ScriptedModel([_call("slow", seconds=30), "done"]), tools=[client])
            started = time.monotonic()
            with anyio.move_on_after(1.0):
                await agent.invoke_async("sleep")
            assert time.monotonic() - started < 3
            # The SDK told the server (notifications/cancelled, or on the 2026 HTTP wire
            # by closing the call's request); the server cancelled the handler.
            deadline = time.monotonic() + 10
            while not records(tmp_path, "cancelled") and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            assert records(tmp_path, "cancelled") == ["slow"]
            # The session goes on: the next call works.
            again = Agent(ScriptedModel([_call("add", a=1, b=2), "3"]), tools=[client])
            await again.invoke_async("add")
            assert _result(again)["status"] == "success"


@pytest.mark.anyio
async def test_agent_cancel_ends_a_slow_mcp_call_with_a_cancelled_result() -> None:
    async with stdio_client() as client:
        agent = Agent(ScriptedModel([_call("slow", seconds=30), "done"]), tools=[client])
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_later, agent)
            started = time.monotonic()
            result = await agent.invoke_async("sleep")
        assert time.monotonic() - started < 5
        assert result.stop_reason == "cancelled"
        assert _result(agent)["status"] == "error"


async def _cancel_later(agent: Agent) -> None:
    await anyio.sleep(0.5)
    agent.cancel()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_dies_mid_call_ends_the_call_with_an_error_result(transport: str) -> None:
    model = ScriptedModel([_call("crash"), _call("add", a=1, b=1), "gone"])
    if transport == "stdio":
        client = stdio_client()
        with client:
            agent = Agent(model, tools=[client])
            started = time.monotonic()
            result = agent("crash")
            elapsed = time.monotonic() - started
    else:
        with http_server() as (url, process), MCPClient.http(url, call_timeout=20) as client:
            agent = Agent(model, tools=[client])
            started = time.monotonic()
            result = agent("crash")
            elapsed = time.monotonic() - started
            assert process.wait(5) == 3
    assert elapsed < 10
    assert result.text == "gone"
    crashed, after = _result(agent, 0), _result(agent, 1)
    assert crashed["status"] == after["status"] == "error"
    text = crashed["content"][0]["text"]
    assert text.startswith("Error: tool 'crash' of MCP server ")
    assert client.label in text


def test_used_without_a_block_the_client_connects_on_first_use_and_closes() -> None:
    client = stdio_client()
    assert repr(client).endswith(", new)")
    agent = Agent(ScriptedModel([_call("pid"), "ok"]), tools=[client])
    assert repr(client).endswith(", new)")  # it connects at the first model call
    agent("pid?")
    pid = _result(agent)["content"][0]["json"]["result"]
    client.close()
    assert _wait_gone(pid)
    with pytest.raises(RuntimeError, match="is closed"):
        client.current_tools()


def test_a_server_that_cannot_start_is_a_connection_error_naming_it() -> None:
    client = MCPClient.stdio(sys.executable, ["-c", "import sys; sys.exit(2)"])
    with pytest.raises(MCPConnectionError, match=r"MCP server stdio 'python -c': could not"):
        client.start()
    refused = MCPClient.http("http://127.0.0.1:9/mcp", startup_timeout=5)
    with pytest.raises(MCPConnectionError, match=r"http://127\.0\.0\.1:9/mcp"):
        refused.start()


def test_secrets_stay_out_of_the_repr_and_errors() -> None:
    client = MCPClient.http(
        "http://user:hunter2@127.0.0.1:9/mcp?key=sk-123", headers={"Authorization": "Bearer t0k"}
    )
    stdio = MCPClient.stdio("server", ["run.py", "--token", "t0k"], env={"API_KEY": "sk-123"})
    with pytest.raises(MCPConnectionError) as raised:
        client.start()
    shown = [repr(client), str(raised.value), repr(stdio)]
    for secret in ("hunter2", "sk-123", "t0k"):
        assert not any(secret in text for text in shown), shown
    assert repr(client) == "MCPClient(http://user:***@127.0.0.1:9/mcp, new)"
    assert repr(stdio) == "MCPClient(stdio 'server run.py', new)"


def test_bad_arguments_are_errors_naming_them() -> None:
    with pytest.raises(TypeError, match="a list of strings"):
        MCPClient.stdio("python", "server.py")
    with pytest.raises(ValueError, match="prefix"):
        MCPClient.stdio("python", ["server.py"], prefix="")
    with pytest.raises(ValueError, match="http"):
        MCPClient.http("ftp://host/mcp")


def test_a_call_over_its_timeout_is_an_error_result_and_is_cancelled_on_the_server(
    tmp_path: Path,
) -> None:
    with stdio_client(record=tmp_path, call_timeout=0.5) as client:
        agent = Agent(ScriptedModel([_call("slow", seconds=30), "too slow"]), tools=[client])
        started = time.monotonic()
        agent("sleep")
        assert time.monotonic() - started < 5
        text = _result(agent)["content"][0]["text"]
        assert text.startswith("Error: tool 'slow' of MCP server ")
        assert "no answer in time" in text
        deadline = time.monotonic() + 10
        while not records(tmp_path, "cancelled") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert records(tmp_path, "cancelled") == ["slow"]


def test_a_client_never_closed_stops_its_server_when_the_interpreter_exits() -> None:
    # The agents guide's one-line change: a client straight in the tools, no block, no close().
    code = (
        "import sys\n"
        "from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn\n"
        "from stageware.mcp import MCPClient\n"
        "turn = ScriptedTurn(tool_calls=[ScriptedToolCall('pid', {})])\n"
        f"client = MCPClient.stdio(sys.executable, [{str(SERVER)!r}])\n"
        "agent = Agent(ScriptedModel([turn, 'ok']), tools=[client])\n"
        "agent('pid?')\n"
        "print(agent.messages[2]['content'][0]['toolResult']['content'][0]['json']['result'])\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    pid = int(completed.stdout.strip())
    assert _wait_gone(pid, 2.0)
