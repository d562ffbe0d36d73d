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
    nine_wraps = MiddlewareRegistry()
    for _ in range(9):
        nine_wraps.add_middleware(EchoStage, passthrough)
    every_phase = MiddlewareRegistry()
    every_phase.add_middleware(EchoStage.Input, keep)
    every_phase.add_middleware(EchoStage, passthrough)
    every_phase.add_middleware(EchoStage.Output, keep_result)
    return {
        "no handlers": empty,
        "1 wrap": one_wrap,
        "5 wraps": five_wraps,
        "9 wraps": nine_wraps,
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
        "9 hand-nested generators": hand_nested(9),
    }
    for name, registry in registries.items():
        chains[name] = registry.compose(EchoStage, terminal)
    chains["invoke(), 5 wraps"] = invoke_chain(registries["5 wraps"])
    timings: dict[str, list[float]] = {name: [] for name in chains}
    order = list(chains)
    for round_ in range(rounds):
        # A different order each round, so no configuration always follows the same one.
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            timings[name].append(await _time(chains[name], context, calls))
    return timings


def paired_ratio(timings: dict[str, list[float]], name: str, reference: str) -> float:
    """The median, over rounds, of *name*'s time over *reference*'s in the same round."""
    return statistics.median(
        ours / theirs for ours, theirs in zip(timings[name], timings[reference], strict=True)
    )


def per_layer(timings: dict[str, list[float]]) -> float:
    """What one Wrap layer costs, relative to one hand-nested generator layer.

    A layer's cost is the difference between the nine-layer chain and the one-layer chain:
    the outermost layer's fixed work (Input and Output handlers, interrupt and result
    checks, closing) cancels out, and what is left is the price of nesting. The ratio is
    taken within each round, where both sides met the same machine, and the median of the
    rounds' ratios is reported.
    """
    ratios = [
        (wraps_9 - wraps_1) / (hand_9 - hand_1)
        for wraps_9, wraps_1, hand_9, hand_1 in zip(
            timings["9 wraps"],
            timings["1 wrap"],
            timings["9 hand-nested generators"],
            timings["1 hand-nested generator"],
            strict=True,
        )
    ]
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    timings = anyio.run(measure, args.rounds, args.calls)
    print_ratios(timings, "terminal", args.calls, "us/call", 1e6)
    print()
    print(f"per Wrap layer / per hand-nested generator layer: {per_layer(timings):.2f}")
    invoke = paired_ratio(timings, "invoke(), no handlers", "terminal")
    print(f"invoke() without handlers / the terminal, paired by round: {invoke:.2f}")


if __name__ == "__main__":
    main()
