"""What an MCP client does about servers that misbehave, and about the loop it serves.

Each test drives a real server process over the real protocol: the SDK's server
(``tools_server.py``), or a hand-written one (``raw_server.py``) for what that will not do
on purpose: answer slowly, list bad names, answer with too much, redirect elsewhere.
"""

from __future__ import annotations

import http.server
import inspect
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.mcp import MCPClient, MCPConnectionError

from .mcp_servers.servers import SERVER, stdio_client

RAW_SERVER = SERVER.with_name("raw_server.py")


def _raw(mode: str, **options: Any) -> MCPClient:
    return MCPClient.stdio(sys.executable, [str(RAW_SERVER), mode], **options)


def _call(name: str, **arguments: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments)])


def _results(agent: Agent) -> list[dict[str, Any]]:
    return [
        dict(block["toolResult"])
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]


class _Ticker:
    """The longest the event loop went without running a task that asked every 20 ms."""

    def __init__(self) -> None:
        self.longest = 0.0

    async def run(self) -> None:
        last = time.monotonic()
        while True:
            await anyio.sleep(0.02)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now


# -- the caller's event loop -------------------------------------------------------------


@pytest.mark.anyio
async def test_waiting_for_an_announced_tool_list_never_stalls_the_event_loop() -> None:
    # The server announces a new list with the call's answer, then takes 3 s to list.
    ticker = _Ticker()
    async with _raw("slowlist") as client:
        model = ScriptedModel([_call("echo"), "done"])
        agent = Agent(model, tools=[client])
        async with anyio.create_task_group() as group:
            group.start_soon(ticker.run)
            started = time.monotonic()
            result = await agent.invoke_async("echo")
            elapsed = time.monotonic() - started
            group.cancel_scope.cancel()
    assert result.text == "done"
    assert elapsed > 2.5  # the new list was waited for...
    assert ticker.longest < 0.5  # ...without holding up the loop


@pytest.mark.anyio
async def test_agent_cancel_cuts_the_wait_for_an_announced_tool_list() -> None:
    async with _raw("slowlist") as client:
        agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])

        async def cancel_soon() -> None:
            await anyio.sleep(0.5)
            agent.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel_soon)
            started = time.monotonic()
            result = await agent.invoke_async("echo")
        assert time.monotonic() - started < 2.0
        assert result.stop_reason == "cancelled"


@pytest.mark.anyio
async def test_refresh_tools_waits_for_a_list_announced_after_a_call_and_can_be_cut() -> None:
    # The change is announced after the call's answer, so the model call's refresh waits.
    ticker = _Ticker()
    async with _raw("latelist") as client, anyio.create_task_group() as group:
        group.start_soon(ticker.run)
        await client.call_tool("echo", {})
        await anyio.sleep(0.3)  # the notification is in
        started = time.monotonic()
        with anyio.move_on_after(0.3) as cut:
            await client.refresh_tools()
        assert cut.cancelled_caught
        assert time.monotonic() - started < 0.6
        await client.refresh_tools()
        assert time.monotonic() - started > 2.5
        group.cancel_scope.cancel()
    assert ticker.longest < 0.5


@pytest.mark.anyio
async def test_an_agent_built_in_async_code_connects_without_stalling_the_loop() -> None:
    # The server takes 2 s to answer initialize; the client is new (no block).
    client = _raw("slowstart")
    ticker = _Ticker()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(ticker.run)
            await anyio.sleep(0.05)
            agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])
            result = await agent.invoke_async("echo")
            group.cancel_scope.cancel()
    finally:
        await anyio.to_thread.run_sync(client.close)
    assert result.text == "done"
    assert _results(agent)[0]["content"] == [{"text": "ok"}]
    assert ticker.longest < 0.5


# -- redirects ----------------------------------------------------------------------------


@contextmanager
def _server(host: str, handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_to_another_origin_is_not_followed_and_the_headers_stay() -> None:
    received: list[dict[str, str]] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(dict(self.headers))
            self.send_response(500)
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    with _server("127.0.0.2", Elsewhere) as elsewhere:

        class Redirector(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.send_response(307)
                self.send_header("location", f"{elsewhere}/mcp")
                self.send_header("content-length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args: object) -> None:
                pass

        with _server("127.0.0.1", Redirector) as origin:
            client = MCPClient.http(
                f"{origin}/mcp", headers={"X-Api-Key": "SECRET"}, startup_timeout=5
            )
            with pytest.raises(MCPConnectionError, match=r"127\.0\.0\.2.* not followed"):
                client.start()
    assert received == []


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["my docs", "a/b", "x" * 63, ""])
def test_a_prefix_no_provider_takes_in_a_tool_name_is_a_value_error(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix must be letters, digits"):
        MCPClient.stdio("python", ["server.py"], prefix=prefix)
    MCPClient.stdio("python", ["server.py"], prefix="x" * 62)


def test_a_server_tool_with_a_bad_name_is_left_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "stageware.mcp"), _raw("badnames") as client:
        agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])
        agent("echo")
        assert agent.tool_names == ["echo"]
    warnings = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(warnings) == 1
    assert client.label in warnings[0]
    assert "'bad name/../xxx" in warnings[0]


def test_a_server_tool_that_takes_a_tools_name_mid_run_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        return f"order {order_id}: shipped"

    model = ScriptedModel([_call("echo"), _call("lookup_order", order_id="7"), "shipped"])
    with caplog.at_level(logging.WARNING, "stageware.tools"), _raw("clash") as client:
        agent = Agent(model, tools=[client, lookup_order])
        result = agent("where is order 7?")
    assert result.text == "shipped"
    assert _results(agent)[1]["content"] == [{"text": "order 7: shipped"}]
    second = [spec["name"] for spec in model.requests[1].tool_specs]
    assert second == ["echo", "lookup_order"]
    assert any("two tools are named 'lookup_order'" in r.getMessage() for r in caplog.records)


# -- results ------------------------------------------------------------------------------


def test_a_result_past_max_result_chars_is_cut_with_a_note_the_model_reads() -> None:
    with _raw("huge") as client:  # two text blocks of 60,000 characters
        agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])
        agent("echo")
    content = _results(agent)[0]["content"]
    assert content == [
        {"text": "a" * 60_000},
        {"text": "b" * 40_000},
        {"text": "[the result was cut: these are the first 100000 of its 120000 characters]"},
    ]

    with _raw("huge", max_result_chars=10) as client:
        agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])
        agent("echo")
    assert _results(agent)[0]["content"] == [
        {"text": "a" * 10},
        {"text": "[the result was cut: these are the first 10 of its 120000 characters]"},
    ]

    with _raw("huge", max_result_chars=None) as client:
        agent = Agent(ScriptedModel([_call("echo"), "done"]), tools=[client])
        agent("echo")
    assert [len(block["text"]) for block in _results(agent)[0]["content"]] == [60_000, 60_000]

    with pytest.raises(ValueError, match="max_result_chars"):
        _raw("huge", max_result_chars=0)


def test_a_tool_call_has_a_five_minute_timeout_unless_told_otherwise() -> None:
    for factory in (MCPClient.stdio, MCPClient.http):
        assert inspect.signature(factory).parameters["call_timeout"].default == 300.0


# -- a server that exits --------------------------------------------------------------------


def test_a_server_that_exits_drops_its_tools_and_its_calls_say_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = stdio_client()
    with caplog.at_level(logging.WARNING, "stageware.mcp"), client:
        add = next(tool for tool in client.current_tools() if tool.tool_name == "add")
        Agent(ScriptedModel([_call("crash"), "gone"]), tools=[client])("crash")
        deadline = time.monotonic() + 10
        while not repr(client).endswith(", failed)") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert repr(client).endswith(", failed)")
        assert client.current_tools() == ()
        assert any(
            "the session ended (its server exited); its tools are dropped" in r.getMessage()
            for r in caplog.records
        )
        # A tool kept from before is an error result that says why.
        stale = Agent(ScriptedModel([_call("add", a=1, b=2), "no"]), tools=[add])
        stale("add")
        text = _results(stale)[0]["content"][0]["text"]
        where = f"tool 'add' of MCP server {client.label}"
        assert text == f"Error: {where} cannot run: its server exited"
        # start() connects again.
        client.start()
        again = Agent(ScriptedModel([_call("add", a=1, b=2), "3"]), tools=[client])
        again("add")
        assert _results(again)[0]["status"] == "success"
    assert repr(client).endswith(", closed)")
