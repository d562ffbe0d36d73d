"""What an agent's invocation costs with 200 tools registered, against the same with 1.

Run with ``python -m tests.benchmarks.tool_scaling`` (``--quick`` for fewer rounds). Each
configuration runs the same invocation (a prompt, one tool call, a final answer: two model
calls) on a fresh history, on an agent with 1 ``@tool`` and on one with 200 (the same tool
first, then 199 more with a few typed parameters each, as real tools have). The model is a
minimal one that streams a fixed response and reads nothing, so what is measured is the
agent (``ScriptedModel`` compares the specs with its last request's, to share its
recorded copies: a cost of the test double, not of the agent). Time is CPU time of this
process (``time.process_time``), since the machine is shared; the configurations run
interleaved round by round, in a shifted order, and each figure is the median over rounds
of the ratio taken within a round, where both sides met the same machine. Strands makes a
quarter of the calls per round: with 200 tools it is tens of times slower.

Configurations:

- **stageware**: no handler, so no one can see the tool specs and the model gets the
  agent's own.
- **stageware, Input handler**: one InvokeModel Input handler, which sees (and may change)
  a deep copy of the specs, as the spec's copy rules require.
- **strands**: Strands Agents with the same tools and an equally minimal model, when
  ``strands-agents`` is installed (the ``benchmarks`` extra); left out otherwise.

:func:`measure` returns these figures (the keys of the dict):

- ``tools_200_over_1``: stageware, no handler, 200 tools / 1 tool (target ≤ 2).
- ``tools_200_over_1_input_handler``: the same with one InvokeModel Input handler.
- ``tools_200_over_1_strands``: Strands 200 tools / 1 tool (only with Strands installed).
- ``tools_aa``: stageware 1 tool against a second, identical 1-tool agent: the A/A noise
  line, which should read 1.00.
- ``us_per_invocation_1_tool``, ``us_per_invocation_200_tools``: stageware, no handler,
  CPU µs per invocation, for context only.
- ``us_per_extra_tool``: what each tool beyond the first adds to an invocation, in CPU µs
  (the agents guide's "what a tool costs").
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio

from stageware import (
    Agent,
    AgentTool,
    InvokeModelContext,
    InvokeModelStage,
    tool,
)
from tests.benchmarks.agent_scaling import MinimalModel, strands_minimal_model

MANY_TOOLS = 200

Runner = Callable[[int], Awaitable[float]]
"""Runs *calls* invocations and returns the CPU seconds they took."""


async def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return "found"


def other_tool(index: int) -> Callable[..., Awaitable[str]]:
    """The function of the *index*-th extra tool: a few typed, documented parameters."""

    async def search(
        query: str,
        limit: int = 10,
        order: Literal["newest", "oldest", "relevance"] = "relevance",
        tags: list[str] | None = None,
    ) -> str:
        """Search one of the records.

        Args:
            query: What to search for.
            limit: How many results to return at most.
            order: How to sort the results.
            tags: Only results with all of these tags.
        """
        return f"{index}: {query}"

    return search


def stageware_tools(count: int) -> list[AgentTool]:
    tools: list[AgentTool] = [tool(lookup)]
    tools += [tool(other_tool(index), name=f"search_{index}") for index in range(1, count)]
    return tools


def keep(context: InvokeModelContext) -> InvokeModelContext:
    return context


def stageware_runner(tools: list[AgentTool], *, input_handler: bool) -> Runner:
    agent = Agent(MinimalModel(), tools=tools)
    if input_handler:
        agent.add_middleware(InvokeModelStage.Input, keep)

    async def run(calls: int) -> float:
        start = time.process_time()
        for _ in range(calls):
            agent.messages = []  # the same short history every time
            await agent.invoke_async("go")
        return time.process_time() - start

    return run


def strands_runner(count: int) -> Runner:
    # Imported by name, as Any: the type checkers see the same code whether or not the
    # optional strands-agents is installed.
    strands: Any = importlib.import_module("strands")
    tools = [strands.tool(name="lookup")(lookup)]
    tools += [strands.tool(name=f"search_{index}")(other_tool(index)) for index in range(1, count)]
    agent = strands.Agent(model=strands_minimal_model(), tools=tools, callback_handler=None)

    async def run(calls: int) -> float:
        start = time.process_time()
        for _ in range(calls):
            agent.messages = []
            await agent.invoke_async("go")
        return time.process_time() - start

    return run


def strands_installed() -> bool:
    return importlib.util.find_spec("strands") is not None


def runners(with_strands: bool) -> dict[str, Runner]:
    one = stageware_tools(1)
    many = stageware_tools(MANY_TOOLS)
    found = {
        "stageware, 1 tool": stageware_runner(one, input_handler=False),
        "stageware, 1 tool (A/A)": stageware_runner(stageware_tools(1), input_handler=False),
        f"stageware, {MANY_TOOLS} tools": stageware_runner(many, input_handler=False),
        "stageware, Input handler, 1 tool": stageware_runner(one, input_handler=True),
        f"stageware, Input handler, {MANY_TOOLS} tools": stageware_runner(many, input_handler=True),
    }
    if with_strands:
        found["strands, 1 tool"] = strands_runner(1)
        found[f"strands, {MANY_TOOLS} tools"] = strands_runner(MANY_TOOLS)
    return found


async def sample(rounds: int, calls: int, with_strands: bool) -> dict[str, list[float]]:
    """CPU seconds per invocation of every configuration, one sample per round."""
    found = runners(with_strands)
    for run in found.values():  # warm up: first calls build chains and fill caches
        await run(calls)
    timings: dict[str, list[float]] = {name: [] for name in found}
    order = list(found)
    for round_ in range(rounds):
        # A different order each round, so no configuration always follows the same one.
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            # Strands with 200 tools takes tens of times longer: fewer calls keep the run
            # short, and its ratio is a reference only.
            count = max(calls // 4, 2) if name.startswith("strands") else calls
            # The garbage one configuration left is collected here, not in the next's time.
            gc.collect()
            timings[name].append(await found[name](count) / count)
    return timings


def paired_ratio(timings: dict[str, list[float]], name: str, reference: str) -> float:
    """The median, over rounds, of *name*'s time over *reference*'s in the same round."""
    return statistics.median(
        ours / theirs for ours, theirs in zip(timings[name], timings[reference], strict=True)
    )


def figures(timings: dict[str, list[float]]) -> dict[str, float]:
    """The named figures :func:`measure` returns, from the samples."""
    one, many = "stageware, 1 tool", f"stageware, {MANY_TOOLS} tools"
    extra = statistics.median(
        (ours - theirs) / (MANY_TOOLS - 1)
        for ours, theirs in zip(timings[many], timings[one], strict=True)
    )
    result = {
        "tools_200_over_1": paired_ratio(timings, many, one),
        "tools_200_over_1_input_handler": paired_ratio(
            timings,
            f"stageware, Input handler, {MANY_TOOLS} tools",
            "stageware, Input handler, 1 tool",
        ),
        "tools_aa": paired_ratio(timings, "stageware, 1 tool (A/A)", one),
        "us_per_invocation_1_tool": statistics.median(timings[one]) * 1e6,
        "us_per_invocation_200_tools": statistics.median(timings[many]) * 1e6,
        "us_per_extra_tool": extra * 1e6,
    }
    if f"strands, {MANY_TOOLS} tools" in timings:
        result["tools_200_over_1_strands"] = paired_ratio(
            timings, f"strands, {MANY_TOOLS} tools", "strands, 1 tool"
        )
    return result


def run(*, quick: bool) -> dict[str, list[float]]:
    """The samples of every configuration (Strands too when installed)."""
    rounds, calls = (7, 20) if quick else (21, 50)
    return anyio.run(sample, rounds, calls, strands_installed())


def measure(*, quick: bool = False) -> dict[str, float]:
    """Run the benchmark and return its figures (the keys are listed above)."""
    return figures(run(quick=quick))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, a rougher figure")
    args = parser.parse_args()
    if not strands_installed():
        print("Strands is left out: strands-agents is not installed (the benchmarks extra)")
    timings = run(quick=args.quick)
    width = max(len("configuration"), *map(len, timings))
    print(f"{'configuration':<{width}} {'CPU us per invocation':>22}")
    for name, samples in timings.items():
        print(f"{name:<{width}} {statistics.median(samples) * 1e6:>22.1f}")
    print()
    results = figures(timings)
    width = max(map(len, results))
    for name, value in results.items():
        print(f"{name:<{width}} {value:>10.2f}")


if __name__ == "__main__":
    main()
