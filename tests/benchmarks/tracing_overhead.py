"""What OpenTelemetry tracing costs an agent run, off and on, reported as ratios.

Run with ``python -m tests.benchmarks.tracing_overhead``. Every configuration runs the
scripted conversation of ``agent_overhead`` (a tool call, its result, a final answer)
with a Wrap handler on every stage and an Input handler on the model call. They are
interleaved round by round, in a rotating order, so machine noise hits them alike; each
round's time is divided by the same round's time of the agent whose tracing switch is
bypassed (``Agent._core.tracing.start`` replaced by one that returns ``None``: the floor
of an agent with no tracing at all), and the median of those ratios is reported.

- **OpenTelemetry not imported**: the state of an application without the ``otel``
  extra. ``opentelemetry.trace`` is taken out of ``sys.modules`` while this
  configuration runs (this script imports the SDK for the traced ones), so the switch
  sees what such an application shows it.
- **no provider**: the API imported, but no provider set: the global one is still the
  API's proxy, so nothing is traced.
- **provider, spans dropped**: ``Agent(tracer_provider=...)`` with an SDK provider whose
  span processor hands every span to an exporter that drops it: the cost of making the
  spans, without the cost of sending them anywhere.

The second line runs the baseline again: how far from 1.00 it reads is the noise of the
run. The two off states should read 1.00 within that noise: off costs nothing
measurable. Times are CPU time of the process (``time.process_time``), which a busy
machine disturbs less than wall time. The script ends with the switch's own cost per
invocation, timed alone, in the two off states.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from stageware import Agent, AgentStreamStage, ExecuteToolStage, InvokeModelStage
from tests.benchmarks.agent_overhead import (
    echo,
    model_passthrough,
    script,
    stream_passthrough,
    tool_passthrough,
)

BASELINE = "tracing switch bypassed"
AGAIN = "bypassed again (noise)"
CONFIGURATIONS = (
    BASELINE,
    AGAIN,
    "OpenTelemetry not imported",
    "no provider",
    "provider, spans dropped",
)


class _Dropped(SpanExporter):
    """An exporter that accepts every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _Off:
    """A tracing switch that is never on, in place of the agent's own."""

    def start(self, core: object) -> None:
        return None


def _provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Dropped()))
    return provider


def _agent(name: str, calls: int, provider: TracerProvider) -> Agent:
    agent = Agent(
        script(calls),
        tools=[echo],
        tracer_provider=provider if name == "provider, spans dropped" else None,
    )
    if name in (BASELINE, AGAIN):
        off: Any = _Off()
        agent._core.tracing = off
    agent.add_middleware(InvokeModelStage.Input, lambda c: c)
    agent.add_middleware(InvokeModelStage, model_passthrough)
    agent.add_middleware(ExecuteToolStage, tool_passthrough)
    agent.add_middleware(AgentStreamStage, stream_passthrough)
    return agent


async def _time(build: Callable[[], Agent], calls: int, *, hide_api: bool) -> float:
    agent = build()
    hidden = sys.modules.pop("opentelemetry.trace") if hide_api else None
    try:
        start = time.process_time()
        for _ in range(calls):
            # A fresh history each run, as in agent_overhead: a growing one would measure
            # the history's copy, not the tracing.
            agent.messages = []
            await agent.invoke_async("go")
        return time.process_time() - start
    finally:
        if hidden is not None:
            sys.modules["opentelemetry.trace"] = hidden


async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
    """Seconds per configuration and round, for *calls* invocations each."""
    provider = _provider()
    timings: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for round_ in range(rounds):
        # Each round starts with another configuration, so none always runs first.
        shift = round_ % len(CONFIGURATIONS)
        for name in (*CONFIGURATIONS[shift:], *CONFIGURATIONS[:shift]):

            def build(name: str = name) -> Agent:
                return _agent(name, calls, provider)

            hide_api = name == "OpenTelemetry not imported"
            timings[name].append(await _time(build, calls, hide_api=hide_api))
    return timings


def ratios(timings: dict[str, list[float]]) -> dict[str, float]:
    """Each configuration's median, over rounds, of its time over the baseline's that round."""
    reference = timings[BASELINE]
    return {
        name: statistics.median(t / r for t, r in zip(samples, reference, strict=True))
        for name, samples in timings.items()
    }


def tracing_overhead(rounds: int = 30, calls: int = 20) -> dict[str, float]:
    """The ratios this script prints: each configuration against the bypassed switch."""
    return ratios(anyio.run(measure, rounds, calls))


def switch_cost(repeat: int = 100_000) -> dict[str, float]:
    """Microseconds the tracing switch takes per invocation, in the two states that are off."""
    agent = Agent(script(1))
    core = agent._core
    costs: dict[str, float] = {}
    for name in ("OpenTelemetry not imported", "no provider"):
        hidden = sys.modules.pop("opentelemetry.trace") if name != "no provider" else None
        try:
            start = time.process_time()
            for _ in range(repeat):
                core.tracing.start(core)
            costs[name] = (time.process_time() - start) / repeat * 1e6
        finally:
            if hidden is not None:
                sys.modules["opentelemetry.trace"] = hidden
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    timings = anyio.run(measure, args.rounds, args.calls)
    width = max(map(len, timings))
    print(f"{'configuration':<{width}} {'ratio':>7} {'ms/run':>9}")
    for name, ratio in ratios(timings).items():
        per_run = statistics.median(timings[name]) / args.calls * 1e3
        print(f"{name:<{width}} {ratio:>7.2f} {per_run:>9.2f}")
    print()
    for name, micros in switch_cost().items():
        print(f"the switch alone, {name}: {micros:.2f} µs per invocation")


if __name__ == "__main__":
    main()
