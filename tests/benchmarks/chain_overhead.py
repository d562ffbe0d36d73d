"""Chain overhead, measured side by side in one run and reported as ratios.

Run with ``python -m tests.benchmarks.chain_overhead``. Each configuration streams the
same terminal (ten chunks and a result) many times; the configurations are interleaved
round by round so that machine noise hits them alike, and each is reported relative to
calling the terminal directly. Absolute times are printed for context only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import AsyncIterator, Callable

import anyio

from stageware import MiddlewareRegistry
from tests.benchmarks._report import print_ratios
from tests.runtime.stage_fixture import Chunk, Done, EchoContext, EchoEvent, EchoResult, EchoStage

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]
Chain = Callable[[EchoContext], AsyncIterator[EchoEvent]]


async def terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
    for index in range(10):
        yield Chunk(str(index))
    yield Done(context.text)


async def passthrough(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
    async for event in next_fn(context):
        yield event


def hand_nested(layers: int) -> Chain:
    """The floor a Wrap layer is measured against: *layers* plain generators, nested by hand."""
    chain: Chain = terminal
    for _ in range(layers):

        def layer(context: EchoContext, inner: Chain = chain) -> AsyncIterator[EchoEvent]:
            return passthrough(context, inner)

        chain = layer
    return chain


def keep(context: EchoContext) -> EchoContext:
    return context


def keep_result(result: EchoResult) -> EchoResult:
    return result


def configurations() -> dict[str, MiddlewareRegistry]:
    empty = MiddlewareRegistry()
    one_wrap = MiddlewareRegistry()
    one_wrap.add_middleware(EchoStage, passthrough)
    five_wraps = MiddlewareRegistry()
    for _ in range(5):
        five_wraps.add_middleware(EchoStage, passthrough)
    every_phase = MiddlewareRegistry()
    every_phase.add_middleware(EchoStage.Input, keep)
    every_phase.add_middleware(EchoStage, passthrough)
    every_phase.add_middleware(EchoStage.Output, keep_result)
    return {
        "no handlers": empty,
        "1 wrap": one_wrap,
        "5 wraps": five_wraps,
        "input+wrap+output": every_phase,
    }


async def _time(chain: Chain, context: EchoContext, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        async for _event in chain(context):
            pass
    return time.perf_counter() - start


def invoke_chain(registry: MiddlewareRegistry) -> Chain:
    def chain(context: EchoContext) -> AsyncIterator[EchoEvent]:
        return registry.invoke(EchoStage, context, terminal)

    return chain


async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
    context = EchoContext(text="x")
    registries = configurations()
    chains: dict[str, Chain] = {
        "terminal": terminal,
        "invoke(), no handlers": invoke_chain(registries["no handlers"]),
        "1 hand-nested generator": hand_nested(1),
        "5 hand-nested generators": hand_nested(5),
    }
    for name, registry in registries.items():
        chains[name] = registry.compose(EchoStage, terminal)
    chains["invoke(), 5 wraps"] = invoke_chain(registries["5 wraps"])
    timings: dict[str, list[float]] = {name: [] for name in chains}
    for _ in range(rounds):
        for name, chain in chains.items():
            timings[name].append(await _time(chain, context, calls))
    return timings


def per_layer(timings: dict[str, list[float]]) -> float:
    """What one Wrap layer costs, relative to one hand-nested generator layer.

    A layer's cost is the difference between the five-layer chain and the one-layer chain,
    per layer: the outermost layer's fixed work (Input and Output handlers, interrupt and
    result checks, closing) cancels out, and what is left is the price of nesting.
    """

    def median(name: str) -> float:
        return statistics.median(timings[name])

    ours = median("5 wraps") - median("1 wrap")
    floor = median("5 hand-nested generators") - median("1 hand-nested generator")
    return ours / floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    timings = anyio.run(measure, args.rounds, args.calls)
    print_ratios(timings, "terminal", args.calls, "us/call", 1e6)
    print()
    print(f"per Wrap layer / per hand-nested generator layer: {per_layer(timings):.2f}")


if __name__ == "__main__":
    main()
