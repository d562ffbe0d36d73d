"""Every performance target of issues 10 and 17, measured, with the Performance page's table
and plot.

Run with ``python -m tests.benchmarks.summary`` (``--quick`` for fewer rounds). It runs the
benchmarks one after the other, each as ratios within its own run (see each module for
how), prints one markdown table of target against measurement, and redraws
``docs/images/agent_scaling.png``. Issue 17's rows come first: the end-to-end comparison against
Strands 1.62 and Pydantic AI 2.68 (``end_to_end``), with its A/A noise line, and the
targets of the modules that measure one cost each (see ``_cost_rows``). Strands and
Pydantic AI are measured where they are installed (the ``benchmarks`` extra, which also
brings matplotlib); PostgreSQL where ``STAGEWARE_TEST_POSTGRES_URL`` is set. The machine is
shared, so expect a few per cent of noise between runs: the A/A line shows how much.
"""

from __future__ import annotations

import argparse
import os

from tests.benchmarks import (
    agent_scaling,
    end_to_end,
    import_time,
    scripted_memory,
    session_save,
    tracing_overhead,
)
from tests.benchmarks._cost_rows import cost_rows
from tests.benchmarks._rows import Row, at_least, at_most, print_table, reference
from tests.benchmarks.plot import redraw_plot


def agent_rows(results: list[agent_scaling.Scaling]) -> list[Row]:
    by_name = {result.name: result for result in results}
    longest = agent_scaling.HISTORY_LENGTHS[-1]
    plain = by_name["stageware"]
    handler = by_name["stageware, Input handler"]
    deepcopied = by_name["stageware, Input handler, deepcopy"]
    rows = [
        at_most(
            "invocation, 5,000 vs 10 messages of history, no InvokeModel handler",
            plain.ratio(longest),
            1.5,
        ),
        at_least(
            "invocation with one InvokeModel Input handler at 5,000 messages: "
            "speed-up over copying with deepcopy (before)",
            deepcopied.seconds[longest] / handler.seconds[longest],
            2.0,
        ),
    ]
    if "strands" in by_name:
        rows.append(
            reference(
                "Strands 1.62, invocation 5,000 vs 10 messages", by_name["strands"].ratio(longest)
            )
        )
    return rows


def session_rows(results: list[session_save.StoreScaling]) -> list[Row]:
    longest = 5_000
    rows: list[Row] = []
    for result in results:
        rows.append(
            at_most(
                f"session save ({result.store}), 5,000 vs 10 messages stored, one new turn",
                result.time_ratio(longest),
                session_save.TIME_TARGET,
            )
        )
    rows.append(
        at_most(
            "bytes written per save / bytes of the new turn (worst store and length)",
            max(result.bytes_ratio(length) for result in results for length in result.written),
            session_save.BYTES_TARGET,
        )
    )
    return rows


def import_rows(timings: dict[str, list[float]]) -> list[Row]:
    ratios = import_time.ratios_to_strands(timings)
    if ratios is None:
        return []
    stageware = ratios["import stageware"]
    rows = [at_most('python -c "import stageware" / "import strands"', stageware, 0.3)]
    for label, ratio in ratios.items():
        if label != "import stageware":
            rows.append(reference(f"{label} / import strands", ratio))
    return rows


def memory_rows() -> list[Row]:
    long = scripted_memory.measure(messages=5_000, calls=20)
    short = scripted_memory.measure(messages=10, calls=20)
    # "No growth": what a call keeps must not depend on the conversation's length. Before
    # issue 10 it was a deep copy of the whole conversation, 3.2 MB at 5,000 messages.
    grows = long.model_bytes > 2 * short.model_bytes + 1024
    return [
        Row(
            "ScriptedModel: memory it keeps per invocation, 5,000 messages (10 messages)",
            "no growth",
            f"{long.model_bytes / 1024:.1f} KiB ({short.model_bytes / 1024:.1f} KiB)",
            not grows,
        )
    ]


def tracing_rows(ratios: dict[str, float]) -> list[Row]:
    return [
        at_most(
            "invocation with OpenTelemetry imported but no provider / tracing bypassed",
            ratios["no provider"],
            1.05,
        ),
        at_most(
            "invocation without OpenTelemetry imported / tracing bypassed",
            ratios["OpenTelemetry not imported"],
            1.05,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a rough check")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    compared = end_to_end.measure(quick=args.quick)
    rows = cost_rows(compared, args.quick)
    scaling = agent_scaling.run_benchmark(rounds=rounds, calls=5)
    rows += agent_rows(scaling)
    rows += session_rows(
        session_save.measure(
            rounds=rounds * 3, postgres_url=os.environ.get(session_save.POSTGRES_URL_VARIABLE)
        )
    )
    rows += import_rows(import_time.measure(rounds * 2))
    rows += memory_rows()
    rows += tracing_rows(tracing_overhead.tracing_overhead(rounds=rounds * 4))
    print()
    print_table(rows)
    print()
    end_to_end.print_table(compared)
    print()
    agent_scaling.print_scaling(scaling)
    print(f"\n{redraw_plot(scaling)}")


if __name__ == "__main__":
    main()
