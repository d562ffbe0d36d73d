"""The agents guide's first example ("Running an agent") runs as written, and with each swap.

As written it runs on its scripted model. Its other models and the MCP server's tools are
commented lines, each a whole swap on its own (the import is on the line): each test
here uncomments exactly one line (the MCP one with a model line too, for a model that
calls the server's tool) and runs the example against a fake server that speaks the
provider's wire protocol, pointed at through the environment as a user would point the
SDK at a proxy: ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``,
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``. The MCP line starts ``python orders_server.py``
over stdio, run from ``tests/host/mcp_servers`` with this interpreter as ``python``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Imported before any test captures output: the mcp SDK's stdio transport gives the server
# the sys.stderr of its import time, and a captured one has no file descriptor.
import stageware.mcp  # noqa: F401  # pyright: ignore[reportUnusedImport]
from tests.readme import first_block, page_of

from . import fake_anthropic_server as anthropic_fake
from . import fake_bedrock_server as bedrock_fake
from . import fake_openai_server as openai_fake

HEADING = "## Running an agent\n"
MCP_SERVERS = Path(__file__).resolve().parent / "mcp_servers"

OPENAI = "# from stageware.openai import OpenAIModel; "
ANTHROPIC = "# from stageware.anthropic import AnthropicModel; "
BEDROCK = "# from stageware.bedrock import BedrockModel; "
MCP = "# from stageware.mcp import MCPClient; "

ANSWER = "Your order has shipped."
# A model line that asks for a refund instead of answering.
ASKS_FOR_A_REFUND = (
    "from stageware import ScriptedToolCall, ScriptedTurn\n"
    "model = ScriptedModel([ScriptedTurn(tool_calls=["
    "ScriptedToolCall('refund', {'order_id': 1042}, id='t1')]), 'Refunded.'])\n"
)


def _first_example() -> str:
    return first_block(HEADING)


def _uncommented(code: str, *prefixes: str) -> str:
    """*code* with the one line that starts with each of *prefixes* uncommented."""
    lines = code.splitlines(keepends=True)
    for prefix in prefixes:
        [index] = [n for n, line in enumerate(lines) if line.startswith(prefix)]
        lines[index] = lines[index].removeprefix("# ")
    return "".join(lines)


def _run(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, page_of(HEADING), "exec"), namespace)
    finally:
        for item in namespace.get("tools", []):
            close = getattr(item, "close", None)
            if close is not None:
                close()
    return namespace


def _printed(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    stop_reason, rest = capsys.readouterr().out.split(" ", 1)
    return stop_reason, rest


def test_the_first_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    _run(_first_example())

    stop_reason, text = _printed(capsys)
    assert stop_reason == "end_turn"
    assert text.startswith(f"{ANSWER} {{")


def test_the_approval_line_stops_a_refund_for_a_person() -> None:
    # The example as written, on a model that asks for a refund.
    code = _first_example()
    line = 'model: Model = ScriptedModel(["Your order has shipped."])\n'
    assert line in code

    namespace = _run(code.replace(line, ASKS_FOR_A_REFUND))

    result = namespace["result"]
    assert result.stop_reason == "interrupt"
    [interrupt] = result.interrupts
    assert interrupt.id.startswith("v2:policy:tool.before:require_approval:t1#")
    assert interrupt.reason["step"] == {"tool": "refund", "input": {"order_id": 1042}}
    # The refund did not run: the history ends with the model's call, without a result.
    history = namespace["agent"].messages
    assert [block.keys() for block in history[-1]["content"]] == [{"toolUse"}]


def test_without_the_approval_line_the_refund_runs() -> None:
    # The contrast that shows the line above does the stopping.
    code = _first_example()
    line = 'policy = PolicyEngine([require_approval(tools=["refund"])])'
    assert line in code
    code = code.replace(line, "policy = PolicyEngine([])").replace(
        'model: Model = ScriptedModel(["Your order has shipped."])\n', ASKS_FOR_A_REFUND
    )

    namespace = _run(code)

    assert namespace["result"].stop_reason == "end_turn"
    results = [b for m in namespace["agent"].messages for b in m["content"] if "toolResult" in b]
    assert results[0]["toolResult"]["content"] == [{"text": "Order 1042 refunded."}]


def test_each_swap_is_one_commented_line_with_its_import() -> None:
    code = _first_example()
    swaps = [line for line in code.splitlines() if line.startswith("# from stageware.")]

    assert [line[: line.index(";") + 2] for line in swaps] == [OPENAI, ANTHROPIC, BEDROCK, MCP]
    # Uncommenting changes that line and nothing else.
    for prefix in (OPENAI, ANTHROPIC, BEDROCK, MCP):
        before, after = code.splitlines(), _uncommented(code, prefix).splitlines()
        [(old, new)] = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert old == f"# {new}"


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[openai_fake.FakeOpenAIServer]:
    fake = openai_fake.FakeOpenAIServer()
    fake.start()
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield fake
    fake.close()


def _openai_turns(tool: str, tool_input: dict[str, Any]) -> tuple[Any, Any]:
    call = openai_fake.tool_delta(0, id="call_1", name=tool, arguments=json.dumps(tool_input))
    return (
        openai_fake.SSEReply(
            [
                openai_fake.chunk(call),
                openai_fake.chunk({}, "tool_calls"),
                openai_fake.usage_chunk(20, 8),
            ]
        ),
        openai_fake.SSEReply(
            [
                openai_fake.chunk({"content": ANSWER}),
                openai_fake.chunk({}, "stop"),
                openai_fake.usage_chunk(30, 5),
            ]
        ),
    )


def test_the_openai_line(
    openai_server: openai_fake.FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.reply(*_openai_turns("lookup_order", {"order_id": 1042}))

    _run(_uncommented(_first_example(), OPENAI))

    assert _printed(capsys) == (
        "end_turn",
        f"{ANSWER} {{'inputTokens': 50, 'outputTokens': 13, 'totalTokens': 63}}\n",
    )
    first, second = (request.body for request in openai_server.requests)
    assert first["model"] == "gpt-4o-mini"
    # The middleware's system prompt is what the model is sent.
    assert first["messages"][0] == {"role": "system", "content": "Be terse."}
    assert [tool["function"]["name"] for tool in first["tools"]] == ["lookup_order", "refund"]
    assert json.loads(second["messages"][-1]["content"]) == {
        "order_id": 1042,
        "status": "shipped",
    }
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_the_anthropic_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = anthropic_fake.FakeAnthropicServer()
    server.start()
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        server.reply(
            anthropic_fake.SSEReply(
                anthropic_fake.message(
                    anthropic_fake.tool_block("toolu_1", "lookup_order", {"order_id": 1042}),
                    stop_reason="tool_use",
                )
            ),
            anthropic_fake.SSEReply(anthropic_fake.message(anthropic_fake.text_block(ANSWER))),
        )

        _run(_uncommented(_first_example(), ANTHROPIC))
    finally:
        server.close()

    stop_reason, text = _printed(capsys)
    assert (stop_reason, text.startswith(f"{ANSWER} {{")) == ("end_turn", True)
    first, second = (request.body for request in server.requests)
    assert first["model"] == "claude-sonnet-4-6"
    assert first["system"] == [{"type": "text", "text": "Be terse."}]
    assert [tool["name"] for tool in first["tools"]] == ["lookup_order", "refund"]
    result = second["messages"][-1]["content"][0]
    assert (result["type"], result["tool_use_id"]) == ("tool_result", "toolu_1")
    assert "shipped" in json.dumps(result["content"])


def test_the_bedrock_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = bedrock_fake.FakeBedrockServer()
    server.start()
    try:
        # Static credentials and a region from the environment, no config files.
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.endpoint_url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", bedrock_fake.ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", bedrock_fake.SECRET_KEY)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
        server.reply(
            bedrock_fake.StreamReply(
                [
                    ("messageStart", {"role": "assistant"}),
                    *bedrock_fake.tool_events("tooluse_1", "lookup_order", '{"order_id": 1042}'),
                    ("messageStop", {"stopReason": "tool_use"}),
                    bedrock_fake.metadata(),
                ]
            ),
            bedrock_fake.StreamReply([*bedrock_fake.text_events(ANSWER), bedrock_fake.metadata()]),
        )

        _run(_uncommented(_first_example(), BEDROCK))
    finally:
        server.close()

    stop_reason, text = _printed(capsys)
    assert (stop_reason, text.startswith(f"{ANSWER} {{")) == ("end_turn", True)
    first, second = server.requests
    assert first.model_id == "global.anthropic.claude-sonnet-4-6"
    assert first.body["system"] == [{"text": "Be terse."}]
    tools = [t["toolSpec"]["name"] for t in first.body["toolConfig"]["tools"]]
    assert tools == ["lookup_order", "refund"]
    result = second.body["messages"][-1]["content"][0]["toolResult"]
    assert (result["toolUseId"], result["status"]) == ("tooluse_1", "success")


@pytest.fixture
def in_the_orders_server_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``python orders_server.py`` starts the test server with this interpreter.

    ``python`` is a script that runs it, first on ``PATH``: the interpreter's own
    directory may have only ``python3``, and a link would lose a virtual environment.
    """
    launcher = tmp_path / "python"
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(MCP_SERVERS)


@pytest.mark.usefixtures("in_the_orders_server_directory")
def test_the_mcp_line_offers_the_servers_tools(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = _run(_uncommented(_first_example(), MCP))

    assert _printed(capsys)[0] == "end_turn"
    [request] = namespace["model"].requests
    assert [spec["name"] for spec in request.tool_specs] == [
        "lookup_order",
        "refund",
        "track_shipment",
    ]


@pytest.mark.usefixtures("in_the_orders_server_directory")
def test_the_mcp_line_with_a_model_line_calls_the_servers_tool(
    openai_server: openai_fake.FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.reply(*_openai_turns("track_shipment", {"order_id": 1042}))

    _run(_uncommented(_first_example(), OPENAI, MCP))

    assert _printed(capsys)[0] == "end_turn"
    first, second = (request.body for request in openai_server.requests)
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "lookup_order",
        "refund",
        "track_shipment",
    ]
    answer = second["messages"][-1]
    assert answer["role"] == "tool"
    assert "DHL" in answer["content"]
