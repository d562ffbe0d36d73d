"""Chain overhead, measured side by side in one run and reported as ratios.

Run with ``python -m tests.benchmarks.chain_overhead`` (``--quick`` for fewer rounds).
Each configuration streams a terminal many times; the configurations are interleaved
round by round, in a rotating order, so that machine noise hits them alike, and each
figure is a ratio taken within a round, the median over the rounds reported. Times are
CPU time of the process (``time.process_time``), which a busy machine disturbs less than
wall time. Absolute times are printed for context only.

Two terminals: the *long* one streams ten chunks and a result; the *short* one yields its
result only, about 2.5 µs a call on a shared two-core machine, the terminal issue 17
measures ``invoke()`` around.

``measure()`` returns these keys:

- ``invoke_no_handlers``: ``registry.invoke()`` on a stage without handlers, over
  calling the long terminal directly.
- ``invoke_no_handlers_short``: the same around the short terminal.
- ``wrap_layer_20_vs_0``: what one Wrap layer costs over what one hand-nested async
  generator layer costs, from 20 layers against none (the bare terminal): the outermost
  layer's fixed work is spread over the 20 layers and counted.
- ``wrap_layer_9_vs_1``: the same from 9 layers against 1: the outermost layer's fixed
  work cancels out, so this is the price of nesting alone.
- ``wrap_layer_20_vs_0_invoke``: ``wrap_layer_20_vs_0`` through ``invoke()``, whose chains
  also check that the result came through.
- ``noise``: the long terminal against itself, timed as two configurations: how far it
  reads from 1.00 is the noise of the run.
- ``terminal_us``, ``short_terminal_us``: the two terminals' CPU time per call, in µs.

How a round is timed, and what an earlier version of this module got wrong. Each round
times every configuration in short slices, several per configuration, the slices of all
configurations interleaved in a rotating order, so a configuration's time for the round is
spread over the whole round as its reference's is; before, each configuration was timed in
one block, so a ratio compared two blocks up to a second apart, and a busy spell of the
machine landed on one side only (the two figures issue 17 targets moved by up to 0.14
between runs). The garbage collector is run before each round and kept off while it is timed, as
``timeit`` does, so a collection triggered by the heap of whatever ran before (the
summary runs other benchmarks in the same process) does not land in one configuration's
slice only; every call here frees what it made, so nothing piles up meanwhile. One round
runs first, untimed, so that first calls (a chain's ``next_fn``s are made then, and the
interpreter specialises its bytecode) are not counted; before, they were counted in the
first round. Each configuration's timing loop has a code object of its own
(``own_code``): the interpreter specialises a call site for the callable it meets, and
all configurations' loops shared one site, so each was timed on a site the others had just
despecialised. The short terminal's two configurations make five times the calls of the
others: with as many calls as the rest, a round timed them for 4 ms, and the short terminal
timed against itself read anywhere from 0.87 to 1.11 round by round. A slice is a few
hundred calls, a millisecond or more of CPU time, which the process clock (nanoseconds)
resolves well; the timing loop's own cost is the same on both sides of every ratio, and
cancels in the per-layer differences. What each ratio compares is unchanged: the same
terminal on both sides, each stream read to its end the same way.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast

import anyio

from stageware import MiddlewareRegistry
from tests.benchmarks._report import print_ratios
from tests.runtime.stage_fixture import Chunk, Done, EchoContext, EchoEvent, EchoResult, EchoStage

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]
Chain = Callable[[EchoContext], AsyncIterator[EchoEvent]]
Timer = Callable[[EchoContext, int], Awaitable[float]]

TERMINAL = "terminal"
AGAIN = "terminal again (noise)"
SHORT = "short terminal"
INVOKE_SHORT = "invoke(), no handlers, short terminal"


async def terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
    for index in range(10):
        yield Chunk(str(index))
    yield Done(context.text)


async def short_terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
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


def wraps(count: int) -> MiddlewareRegistry:
    registry = MiddlewareRegistry()
    for _ in range(count):
        registry.add_middleware(EchoStage, passthrough)
    return registry


def every_phase() -> MiddlewareRegistry:
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage.Input, keep)
    registry.add_middleware(EchoStage, passthrough)
    registry.add_middleware(EchoStage.Output, keep_result)
    return registry


def own_code(timer: Timer) -> Timer:
    """*timer* with a code object of its own, so that its call sites are its own.

    The interpreter specialises a call site for what it calls, in the code object; timers
    made by one factory share theirs, so each configuration's calls went through a site
    that the other configurations' calls had just despecialised, the reference's as well.
    """
    code = timer.__code__.replace()
    return cast(
        "Timer",
        types.FunctionType(
            code, timer.__globals__, timer.__name__, timer.__defaults__, timer.__closure__
        ),
    )


def timing_chain(chain: Chain) -> Timer:
    @own_code
    async def time_calls(context: EchoContext, calls: int) -> float:
        start = time.process_time()
        for _ in range(calls):
            async for _event in chain(context):
                pass
        return time.process_time() - start

    return time_calls


def timing_invoke(registry: MiddlewareRegistry, stage_terminal: Chain) -> Timer:
    """``registry.invoke()`` called where ``timing_chain`` calls the chain, and nothing else."""

    @own_code
    async def time_calls(context: EchoContext, calls: int) -> float:
        start = time.process_time()
        for _ in range(calls):
            async for _event in registry.invoke(EchoStage, context, stage_terminal):
                pass
        return time.process_time() - start

    return time_calls


def configurations() -> dict[str, Timer]:
    empty = MiddlewareRegistry()
    twenty = wraps(20)
    timers = {
        TERMINAL: timing_chain(terminal),
        AGAIN: timing_chain(terminal),
        SHORT: timing_chain(short_terminal),
        "invoke(), no handlers": timing_invoke(empty, terminal),
        INVOKE_SHORT: timing_invoke(empty, short_terminal),
    }
    for layers in (1, 9, 20):
        timers[f"hand-nested x{layers}"] = timing_chain(hand_nested(layers))
    for layers in (1, 5, 9, 20):
        timers[f"wraps x{layers}"] = timing_chain(wraps(layers).compose(EchoStage, terminal))
    timers["input+wrap+output"] = timing_chain(every_phase().compose(EchoStage, terminal))
    timers["invoke(), wraps x5"] = timing_invoke(wraps(5), terminal)
    timers["invoke(), wraps x20"] = timing_invoke(twenty, terminal)
    return timers


async def collect(rounds: int, calls: int) -> dict[str, list[float]]:
    """Each configuration's time for *calls* calls, per round, in seconds."""
    context = EchoContext(text="x")
    timers = configurations()
    timings: dict[str, list[float]] = {name: [] for name in timers}
    order = list(timers)
    slice_calls = max(1, calls // SLICES)
    # The short terminal's configurations make more calls, each counted as 1/SHORT_CALLS.
    weights = {name: SHORT_CALLS if name in SHORT_CONFIGURATIONS else 1 for name in order}
    for round_ in range(-1, rounds):  # Round -1 warms up, and is not kept.
        totals = dict.fromkeys(order, 0.0)
        gc.collect()
        gc.disable()
        try:
            for slice_ in range(SLICES):
                # A different order each slice, so no configuration always follows the same one.
                shift = (round_ * SLICES + slice_) % len(order)
                for name in order[shift:] + order[:shift]:
                    weight = weights[name]
                    totals[name] += await timers[name](context, slice_calls * weight) / weight
        finally:
            gc.enable()
        if round_ >= 0:
            for name, total in totals.items():
                timings[name].append(total)
    return timings


# Slices per configuration per round: each is a millisecond or more of CPU time.
SLICES = 6

# The short terminal's configurations make this many times the calls of the others, so
# that their samples are as long (about 20 ms a round) and as steady as the terminal's.
SHORT_CALLS = 5
SHORT_CONFIGURATIONS = frozenset({SHORT, INVOKE_SHORT})


def paired_ratio(timings: dict[str, list[float]], name: str, reference: str) -> float:
    """The median, over rounds, of *name*'s time over *reference*'s in the same round."""
    return statistics.median(
        ours / theirs for ours, theirs in zip(timings[name], timings[reference], strict=True)
    )


def per_layer(
    timings: dict[str, list[float]], wrapped: tuple[str, str], hand: tuple[str, str]
) -> float:
    """What one Wrap layer costs, relative to one hand-nested generator layer.

    *wrapped* and *hand* each name a deeper and a shallower configuration; a layer's cost
    is the difference between the two, divided by the number of layers between them,
    which is the same on both sides. The ratio is taken within each round, where both
    sides met the same machine, and the median of the rounds' ratios is reported.
    """
    columns = (timings[wrapped[0]], timings[wrapped[1]], timings[hand[0]], timings[hand[1]])
    ratios = [
        (deep - shallow) / (hand_deep - hand_shallow)
        for deep, shallow, hand_deep, hand_shallow in zip(*columns, strict=True)
    ]
    return statistics.median(ratios)


def figures(timings: dict[str, list[float]], calls: int) -> dict[str, float]:
    """The named figures ``measure()`` returns, from *timings* of *calls* calls a round."""
    hand_20 = ("hand-nested x20", TERMINAL)
    return {
        "invoke_no_handlers": paired_ratio(timings, "invoke(), no handlers", TERMINAL),
        "invoke_no_handlers_short": paired_ratio(timings, INVOKE_SHORT, SHORT),
        "wrap_layer_20_vs_0": per_layer(timings, ("wraps x20", TERMINAL), hand_20),
        "wrap_layer_9_vs_1": per_layer(
            timings, ("wraps x9", "wraps x1"), ("hand-nested x9", "hand-nested x1")
        ),
        "wrap_layer_20_vs_0_invoke": per_layer(timings, ("invoke(), wraps x20", TERMINAL), hand_20),
        "noise": paired_ratio(timings, AGAIN, TERMINAL),
        "terminal_us": statistics.median(timings[TERMINAL]) / calls * 1e6,
        "short_terminal_us": statistics.median(timings[SHORT]) / calls * 1e6,
    }


def settings(*, quick: bool) -> tuple[int, int]:
    """Rounds and calls per round: about 40 s by default, 8 s quick, on a shared machine.

    *calls* is a multiple of ``SLICES``, so every round times exactly *calls* calls.
    """
    return (9, 1020) if quick else (31, 1500)


def measure(*, quick: bool = False) -> dict[str, float]:
    """Run the configurations and return the figures the module docstring lists."""
    rounds, calls = settings(quick=quick)
    return figures(anyio.run(collect, rounds, calls), calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    args = parser.parse_args()
    rounds, calls = settings(quick=args.quick)
    timings = anyio.run(collect, rounds, calls)
    print_ratios(timings, TERMINAL, calls, "us/call", 1e6)
    print()
    results = figures(timings, calls)
    labels = {
        "invoke_no_handlers": "invoke() without handlers / the terminal",
        "invoke_no_handlers_short": "invoke() without handlers / the short terminal",
        "wrap_layer_20_vs_0": "per Wrap layer / per hand-nested layer, 20 layers against 0",
        "wrap_layer_9_vs_1": "per Wrap layer / per hand-nested layer, 9 layers against 1",
        "wrap_layer_20_vs_0_invoke": "the same, 20 against 0, through invoke()",
        "noise": "the terminal against itself (noise of the run)",
    }
    width = max(map(len, labels.values()))
    for key, label in labels.items():
        print(f"{label:<{width}} {results[key]:>6.2f}")
    print(f"{'terminal, short terminal (us/call)':<{width}} ", end="")
    print(f"{results['terminal_us']:.2f}, {results['short_terminal_us']:.2f}")


if __name__ == "__main__":
    main()
