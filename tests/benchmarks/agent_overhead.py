"""What middleware costs an agent run, measured side by side and reported as ratios.

Run with ``python -m tests.benchmarks.agent_overhead``. Every configuration runs the same
scripted conversation (a tool call, its result, a final answer) on an ``Agent``; they are
interleaved round by round so machine noise hits them alike, and each is reported
relative to the agent without middleware. Absolute times are printed for context only.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Callable

import anyio

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
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)
from tests.benchmarks._report import print_ratios


@tool
async def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return text


async def model_passthrough(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    async for event in next_fn(context):
        yield event


async def tool_passthrough(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    async for event in next_fn(context):
        yield event


async def stream_passthrough(
    context: AgentStreamContext, next_fn: AgentStreamNext
) -> AsyncIterator[AgentStreamEvent]:
    async for event in next_fn(context):
        yield event


def script(calls: int) -> ScriptedModel:
    turn = ScriptedTurn(text="checking", tool_calls=[ScriptedToolCall("echo", {"text": "hi"})])
    return ScriptedModel([turn, "done"] * calls, chunk_size=4)


def configure(name: str, agent: Agent) -> None:
    if name == "no middleware":
        return
    handlers_per_stage = 1 if name == "1 wrap per stage" else 5
    for _ in range(handlers_per_stage):
        agent.add_middleware(InvokeModelStage, model_passthrough)
        agent.add_middleware(ExecuteToolStage, tool_passthrough)
        agent.add_middleware(AgentStreamStage, stream_passthrough)
    if name == "every phase, every stage":
        agent.add_middleware(InvokeModelStage.Input, lambda c: c)
        agent.add_middleware(InvokeModelStage.Output, lambda r: r)
        agent.add_middleware(ExecuteToolStage.Input, lambda c: c)
        agent.add_middleware(ExecuteToolStage.Output, lambda r: r)


CONFIGURATIONS = (
    "no middleware",
    "1 wrap per stage",
    "5 wraps per stage",
    "every phase, every stage",
)


async def _time(build: Callable[[], Agent], calls: int) -> float:
    agent = build()
    start = time.perf_counter()
    for _ in range(calls):
        # A fresh history each run: with InvokeModel handlers the model call copies it, and
        # a history that grew run after run would measure the copy, not the middleware
        # (tests.benchmarks.agent_scaling measures that growth on its own).
        agent.messages = []
        await agent.invoke_async("go")
    return time.perf_counter() - start


async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(rounds):
        for name in CONFIGURATIONS:

            def build(name: str = name) -> Agent:
                agent = Agent(script(calls), tools=[echo])
                configure(name, agent)
                return agent

            timings[name].append(await _time(build, calls))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    timings = anyio.run(measure, args.rounds, args.calls)
    print_ratios(timings, "no middleware", args.calls, "ms/run", 1e3)


if __name__ == "__main__":
    main()
