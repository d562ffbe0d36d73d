"""Port of Strands 1.62 ``tests_typing/test_middleware.py`` (static typing of middleware).

Strands Agents is Apache-2.0; this is a rewrite of its cases in stageware's idiom, not a
copy. Strands' file is not run, only type-checked; here ``CASES`` is written to a temporary
directory and checked by mypy (strict, ``warn_unused_ignores``, so an expected error that
stops being one fails too) against the installed ``stageware``. Strands annotates Wrap
handlers with ``MiddlewareNext[Ctx, TypedEvent]``, that is
``Callable[[Ctx], AsyncGenerator[TypedEvent, None]]``, and returns
``AsyncGenerator[TypedEvent, None]``; stageware has no common event base class, so
``TypedEvent`` is ``Any`` in the port. Strands' ``agent.add_middleware`` is
``stageware.Agent.add_middleware``, whose overloads are checked the same way.

The runtime half of the same contract (``next_fn`` returns a real ``AsyncGenerator``, so
the annotation is true) is checked on a live agent for each stage.
"""

from __future__ import annotations

import collections.abc
import string
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stageware import (
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ScriptedModel,
    tool,
)

from .support import tool_turn

CASES = string.Template("""
$imports

from typing_extensions import assert_type

from stageware import (
    Agent,
    ExecuteToolContext,
    ExecuteToolResult,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelResult,
    InvokeModelStage,
    Message,
    ModelStopReason,
    StopReason,
    ToolResultEvent,
)


def inject_prompt(context: InvokeModelContext) -> InvokeModelContext:
    return context.replace(system_prompt="Be concise.")


async def inject_prompt_async(context: InvokeModelContext) -> InvokeModelContext:
    assert_type(context.replace(model=context.model), InvokeModelContext)
    return context


def log_stop_reason(result: InvokeModelResult) -> InvokeModelResult:
    assert_type(result.result, ModelStopReason)
    assert_type(result.result.stop_reason, StopReason)
    assert_type(result.result.message, Message)
    return InvokeModelResult(result=result.result)


async def rewrite_stop_reason(result: InvokeModelResult) -> InvokeModelResult:
    return result


def rewrite_tool_result(result: ExecuteToolResult) -> ExecuteToolResult:
    assert_type(result.result, ToolResultEvent)
    return result


async def passthrough(
    context: InvokeModelContext,
    next_fn: $invoke_next,
) -> $invoke_events:
    async for event in next_fn(context):
        yield event


async def approval_gate(
    context: ExecuteToolContext,
    next_fn: $tool_next,
) -> $tool_events:
    approval = context.interrupt("approve_tool", reason=context.tool_use["name"])
    if approval.response != "approved":
        yield ToolResultEvent(
            {"toolUseId": context.tool_use["toolUseId"], "status": "error", "content": []}
        )
        return
    async for event in next_fn(context.replace(invocation_state=context.invocation_state)):
        yield event


def unwrap_result(result: InvokeModelResult) -> ModelStopReason:
    return result.result


def register_middleware(agent: Agent) -> None:
    assert_type(agent.add_middleware(InvokeModelStage, passthrough), None)
    agent.add_middleware(InvokeModelStage.Wrap, passthrough)
    agent.add_middleware(InvokeModelStage.Input, inject_prompt)
    agent.add_middleware(InvokeModelStage.Input, inject_prompt_async)
    agent.add_middleware(InvokeModelStage.Output, log_stop_reason)
    agent.add_middleware(InvokeModelStage.Output, rewrite_stop_reason)
    agent.add_middleware(ExecuteToolStage, approval_gate)
    agent.add_middleware(ExecuteToolStage.Output, rewrite_tool_result)

    agent.add_middleware(ExecuteToolStage.Input, inject_prompt)  # type: ignore[arg-type]
    agent.add_middleware(ExecuteToolStage, passthrough)  # type: ignore[arg-type]
    agent.add_middleware(ExecuteToolStage.Output, log_stop_reason)  # type: ignore[arg-type]
    agent.add_middleware(InvokeModelStage, inject_prompt)  # type: ignore[arg-type]
    agent.add_middleware(InvokeModelStage.Output, inject_prompt)  # type: ignore[arg-type]
    agent.add_middleware(InvokeModelStage.Output, unwrap_result)  # type: ignore[arg-type]
""")

# Strands' annotations: MiddlewareNext[Ctx, TypedEvent] spelled out, TypedEvent as Any.
STRANDS_STYLE = {
    "imports": "from collections.abc import AsyncGenerator, Callable\nfrom typing import Any",
    "invoke_next": "Callable[[InvokeModelContext], AsyncGenerator[Any, None]]",
    "invoke_events": "AsyncGenerator[Any, None]",
    "tool_next": "Callable[[ExecuteToolContext], AsyncGenerator[Any, None]]",
    "tool_events": "AsyncGenerator[Any, None]",
}

# stageware's own aliases for the same handlers.
STAGEWARE_STYLE = {
    "imports": "from collections.abc import AsyncIterator\n\n"
    "from stageware import ExecuteToolEvent, ExecuteToolNext, InvokeModelEvent, InvokeModelNext",
    "invoke_next": "InvokeModelNext",
    "invoke_events": "AsyncIterator[InvokeModelEvent]",
    "tool_next": "ExecuteToolNext",
    "tool_events": "AsyncIterator[ExecuteToolEvent]",
}


def run_mypy(source: str, tmp_path: Path) -> tuple[int, str]:
    """Type-check *source* as a module of its own, outside the project's configuration."""
    (tmp_path / "strands_middleware_cases.py").write_text(source)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--warn-unused-ignores",
            "--enable-error-code",
            "ignore-without-code",
            "--python-version",
            "3.11",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "strands_middleware_cases.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.returncode, completed.stdout + completed.stderr


def test_middleware(tmp_path: Path) -> None:
    """Strands' typing cases: handlers of each phase type-check, wrong ones are errors."""
    status, output = run_mypy(CASES.substitute(STRANDS_STYLE), tmp_path)
    assert status == 0, output


def test_middleware_cases_without_strands_style_wrap_annotations(tmp_path: Path) -> None:
    """The same cases with stageware's own Wrap annotations pass today.

    This keeps the rest of the ported cases (Input, Output, the rejected registrations)
    checked while the Strands-style annotations are still refused.
    """
    status, output = run_mypy(CASES.substitute(STAGEWARE_STYLE), tmp_path)
    assert status == 0, output


@pytest.mark.anyio
async def test_next_fn_returns_an_async_generator() -> None:
    """At run time ``next_fn`` returns a real ``AsyncGenerator`` on every stage."""

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    agent = Agent(ScriptedModel([tool_turn("ping", {}, "t1"), "done"]), tools=[ping])
    kinds: dict[str, bool] = {}

    async def on_model(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        events = next_fn(context)
        kinds["InvokeModel"] = isinstance(events, collections.abc.AsyncGenerator)
        async for event in events:
            yield event

    async def on_tool(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        events = next_fn(context)
        kinds["ExecuteTool"] = isinstance(events, collections.abc.AsyncGenerator)
        async for event in events:
            yield event

    async def on_stream(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        events = next_fn(context)
        kinds["AgentStream"] = isinstance(events, collections.abc.AsyncGenerator)
        async for event in events:
            yield event

    agent.add_middleware(InvokeModelStage, on_model)
    agent.add_middleware(ExecuteToolStage, on_tool)
    agent.add_middleware(AgentStreamStage, on_stream)
    await agent.invoke_async("go")

    assert kinds == {"InvokeModel": True, "ExecuteTool": True, "AgentStream": True}
