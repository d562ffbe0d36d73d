"""A model turn whose tool calls repeat a ``toolUseId`` is refused before any tool runs.

Tool results are matched to their calls by id, so such a turn is ambiguous: with the same
input, one answer would release two runs; with another input, a replayed round would take
the first call's result for the second. The turn never enters the history, whichever way it
was made: streamed by a model (here the ``ScriptedModel``) or written by an Output handler.
"""

from __future__ import annotations

from typing import Any

import pytest

from stageware import (
    Agent,
    AgentTool,
    InvokeModelResult,
    InvokeModelStage,
    ModelError,
    ModelStopReason,
    ScriptedModel,
    ScriptedTurn,
    StreamAssemblyError,
    ToolUse,
    tool,
)
from stageware._host.models._streaming import collect_response

from .agent_helpers import calls

pytestmark = pytest.mark.anyio


class Shell:
    """A tool that records what it ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        @tool
        def shell(cmd: str) -> str:
            """Run a command."""
            self.ran.append(cmd)
            return "ok"

        @tool
        def read(path: str) -> str:
            """Read a file."""
            self.ran.append(f"read {path}")
            return "text"

        self.tools: list[AgentTool] = [shell, read]


@pytest.mark.parametrize(
    ("second", "names"),
    [
        pytest.param(("shell", {"cmd": "ls"}), "shell, shell", id="same input"),
        pytest.param(("shell", {"cmd": "rm -rf /"}), "shell, shell", id="another input"),
        pytest.param(("read", {"path": "/etc/passwd"}), "shell, read", id="another tool"),
    ],
)
async def test_a_turn_that_repeats_a_tool_use_id_is_refused_and_nothing_runs(
    second: tuple[str, dict[str, Any]], names: str
) -> None:
    shell = Shell()
    script: list[ScriptedTurn | str] = [
        calls(("shell", {"cmd": "ls"}, "call_0"), (*second, "call_0")),
        "never",
        "Fine.",
    ]
    agent = Agent(ScriptedModel(script), tools=shell.tools)

    with pytest.raises(StreamAssemblyError) as refused:
        await agent.invoke_async("list files")

    assert str(refused.value) == (
        f"the model turn calls 2 tools under one toolUseId 'call_0' ({names}): tool results "
        "are matched to calls by id, so the turn is refused; it was not added to the history "
        "and none of its tools ran"
    )
    assert isinstance(refused.value, ModelError)
    assert shell.ran == []
    assert [message["role"] for message in agent.messages] == ["user"]
    # The history stays one a provider accepts: the next prompt joins the open user turn.
    assert (await agent.invoke_async("again")).text == "never"
    assert shell.ran == []


async def test_distinct_ids_in_one_turn_still_run_every_call() -> None:
    shell = Shell()
    script: list[ScriptedTurn | str] = [
        calls(("shell", {"cmd": "ls"}, "call_0"), ("shell", {"cmd": "pwd"}, "call_1")),
        "ok",
    ]
    agent = Agent(ScriptedModel(script), tools=shell.tools)

    assert (await agent.invoke_async("go")).text == "ok"
    assert sorted(shell.ran) == ["ls", "pwd"]  # the calls run concurrently


async def test_an_output_handler_turn_that_repeats_a_tool_use_id_is_refused() -> None:
    shell = Shell()
    agent = Agent(ScriptedModel(["plain text", "never"]), tools=shell.tools)

    def duplicate(result: InvokeModelResult) -> InvokeModelResult:
        _, message, use, metrics = result.result["stop"]
        call: ToolUse = {"toolUseId": "out1", "name": "shell", "input": {"cmd": "ls"}}
        return result.replace(
            result=ModelStopReason(
                stop_reason="tool_use",
                message={
                    "role": "assistant",
                    "content": [*message["content"], {"toolUse": call}, {"toolUse": call}],
                },
                usage=use,
                metrics=metrics,
            )
        )

    agent.add_middleware(InvokeModelStage.Output, duplicate)
    with pytest.raises(StreamAssemblyError, match=r"under one toolUseId 'out1' \(shell, shell\)"):
        await agent.invoke_async("go")
    assert shell.ran == []
    assert [message["role"] for message in agent.messages] == ["user"]


async def test_the_assembled_stream_is_refused_where_the_turn_is_completed() -> None:
    # Before any InvokeModel middleware or policy sees the turn end.
    turn = calls(("shell", {"cmd": "ls"}, "call_7"), ("read", {"path": "x"}, "call_7"))
    stream = ScriptedModel([turn]).stream([{"role": "user", "content": [{"text": "go"}]}], None)
    with pytest.raises(StreamAssemblyError, match=r"toolUseId 'call_7' \(shell, read\)"):
        await collect_response(stream)
