"""How an agent's invocation time grows with the length of its conversation.

Run with ``python -m tests.benchmarks.agent_scaling``. Each configuration runs the same
invocation (a prompt, one tool call with a 2 KB result, a final answer: two model calls)
on top of a history of 10, 100, 1,000 and 5,000 messages, built like real ones: rounds of
a question, a tool call, a 2 KB tool result and an answer. The model is a minimal one that
streams a fixed response and copies nothing, so what is measured is the agent. Every
history length of every configuration runs once per round, rounds are interleaved, and
each time is the median over rounds; each configuration is reported relative to its own
10-message time, which is the scaling a user sees. Absolute times are printed for context.

Configurations:

- **stageware**: no InvokeModel handler, so nothing copies the history.
- **stageware, Input handler**: one InvokeModel Input handler, so the history goes into
  the context the handler sees as a deep copy, as the spec's copy rules require: the
  copies the last model call handed out are reused where they still equal the history,
  and only the new messages are copied.
- **stageware, Input handler, deepcopy**: the same with the whole history copied by
  ``copy.deepcopy`` on every model call, as before issue 10: the reference.
- **stageware, SlidingWindow**: ``Agent(conversation_manager=SlidingWindow(max_tokens=32_000,
  max_messages=None))``: the model is sent the newest turns within 32k tokens. The
  manager's own work is what the window holds; the history copies its Wrap handler sees
  are kept and checked as for the Input handler.
- **strands**: Strands Agents with the same conversation and an equally minimal model,
  when ``strands-agents`` is installed (the ``benchmarks`` extra); skipped otherwise.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio

import stageware._generated.contexts as generated_contexts
from stageware import Agent, InvokeModelContext, InvokeModelStage, Messages, StreamEvent, tool
from stageware._host._history_copies import HistoryCopies
from stageware.middleware import SlidingWindow
from tests.benchmarks._conversation import TOOL_RESULT, conversation

HISTORY_LENGTHS = (10, 100, 1_000, 5_000)


@tool
async def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return TOOL_RESULT


def response(messages: Any) -> list[dict[str, Any]]:
    """The Converse events of the answer to *messages*: a tool call, then a final answer."""
    last = messages[-1]["content"]
    if not any("toolResult" in block for block in last):
        return [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": "call_1", "name": "lookup"}}
                }
            },
            {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"query": "now"}'}}}},
            {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "tool_use"}},
        ]
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Done."}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


class MinimalModel:
    """A model that answers at once and keeps nothing: the agent's cost, not the model's."""

    def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        return self._events(messages)

    async def _events(self, messages: Messages) -> AsyncIterator[StreamEvent]:
        for event in response(messages):
            yield event  # type: ignore[misc]


def keep(context: InvokeModelContext) -> InvokeModelContext:
    return context


@contextmanager
def deepcopying() -> Iterator[None]:
    """Copy with ``copy.deepcopy``, as before issue 10, for the reference.

    The generated contexts copy with the runtime's ``copy_payload``, and the model call
    keeps its copies of the history from call to call (``HistoryCopies``); both are
    replaced, so the whole history is deep-copied on every model call a handler sees, as
    it was.
    """
    module: Any = generated_contexts  # the name is an import, not the module's export
    saved_copier = module.copy_payload
    saved_copy_of = HistoryCopies.copy_of

    def copy_whole_history(self: HistoryCopies, history: Messages) -> Messages:
        return copy.deepcopy(history)

    module.copy_payload = copy.deepcopy
    HistoryCopies.copy_of = copy_whole_history  # type: ignore[method-assign]
    try:
        yield
    finally:
        module.copy_payload = saved_copier
        HistoryCopies.copy_of = saved_copy_of  # type: ignore[method-assign]


Runner = Callable[[Messages], Awaitable[float]]


def stageware_runner(input_handler: bool, deepcopy: bool = False, managed: bool = False) -> Runner:
    manager = SlidingWindow(max_tokens=32_000, max_messages=None) if managed else None
    agent = Agent(MinimalModel(), tools=[lookup], conversation_manager=manager)
    if input_handler:
        agent.add_middleware(InvokeModelStage.Input, keep)

    async def run(messages: Messages) -> float:
        agent.messages = messages
        if deepcopy:
            with deepcopying():
                start = time.perf_counter()
                await agent.invoke_async("go")
                return time.perf_counter() - start
        start = time.perf_counter()
        await agent.invoke_async("go")
        return time.perf_counter() - start

    return run


def strands_minimal_model() -> Any:
    """Strands 1.62's counterpart of ``MinimalModel``: the same answers, no work of its own."""
    # Imported by name, as Any: the type checkers see the same code whether or not the
    # optional strands-agents is installed.
    strands_models: Any = importlib.import_module("strands.models")

    class StrandsMinimalModel(strands_models.Model):  # type: ignore[misc]
        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {}

        async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError
            yield  # pragma: no cover

        async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            for event in response(messages):
                yield event

    return StrandsMinimalModel()


def strands_runner() -> Runner:
    # Imported by name, as Any: the type checkers see the same code whether or not the
    # optional strands-agents is installed.
    strands: Any = importlib.import_module("strands")
    strands_tool = strands.tool

    @strands_tool(name="lookup")  # type: ignore[untyped-decorator]
    def strands_lookup(query: str) -> str:
        """Look something up.

        Args:
            query: What to look up.
        """
        return TOOL_RESULT

    agent = strands.Agent(
        model=strands_minimal_model(), tools=[strands_lookup], callback_handler=None
    )

    async def run(messages: Messages) -> float:
        agent.messages = messages
        start = time.perf_counter()
        await agent.invoke_async("go")
        return time.perf_counter() - start

    return run


def strands_installed() -> bool:
    return importlib.util.find_spec("strands") is not None


@dataclass(frozen=True)
class Scaling:
    """Median invocation time per history length, for one configuration."""

    name: str
    seconds: dict[int, float]

    def ratio(self, length: int) -> float:
        return self.seconds[length] / self.seconds[HISTORY_LENGTHS[0]]


def configurations(with_strands: bool) -> dict[str, Callable[[], Runner]]:
    found: dict[str, Callable[[], Runner]] = {
        "stageware": lambda: stageware_runner(input_handler=False),
        "stageware, Input handler": lambda: stageware_runner(input_handler=True),
        "stageware, Input handler, deepcopy": lambda: stageware_runner(
            input_handler=True, deepcopy=True
        ),
        "stageware, SlidingWindow (32k tokens)": lambda: stageware_runner(
            input_handler=False, managed=True
        ),
    }
    if with_strands:
        found["strands"] = strands_runner
    return found


async def measure(rounds: int, calls: int, with_strands: bool) -> list[Scaling]:
    histories = {length: conversation(length) for length in HISTORY_LENGTHS}
    builders = configurations(with_strands)
    # An agent per configuration and length: one conversation each, as a user has, so that
    # what an agent keeps between calls (the copies of its history) is kept for that one.
    runners = {(name, length): build() for name, build in builders.items() for length in histories}
    samples: dict[str, dict[int, list[float]]] = {
        name: {length: [] for length in HISTORY_LENGTHS} for name in builders
    }
    for _ in range(rounds):
        for length, messages in histories.items():
            for name in builders:
                run = runners[name, length]
                total = 0.0
                for _ in range(calls):
                    # A fresh list each call (the agent appends to it), same messages inside.
                    total += await run(list(messages))
                samples[name][length].append(total / calls)
    return [
        Scaling(name, {length: statistics.median(times) for length, times in by_length.items()})
        for name, by_length in samples.items()
    ]


def print_scaling(results: list[Scaling]) -> None:
    width = max(len("configuration"), *(len(result.name) for result in results))
    header = "".join(f"{length:>15,}" for length in HISTORY_LENGTHS)
    print(f"{'configuration':<{width}} {header}   (ms per invocation, ratio to 10 messages)")
    for result in results:
        cells = "".join(
            f"{result.seconds[length] * 1e3:>8.2f} {result.ratio(length):>5.1f}x"
            for length in HISTORY_LENGTHS
        )
        print(f"{result.name:<{width}} {cells}")


def run_benchmark(rounds: int = 5, calls: int = 5) -> list[Scaling]:
    """Measure every configuration; Strands only when it is installed."""
    with_strands = strands_installed()
    if not with_strands:
        print("Strands is skipped: strands-agents is not installed (the benchmarks extra)")
    return anyio.run(measure, rounds, calls, with_strands)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    print_scaling(run_benchmark(args.rounds, args.calls))


if __name__ == "__main__":
    main()
