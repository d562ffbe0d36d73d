"""Issue 17's targets (cost where users feel it), as rows of the summary's table.

The rows against Strands and Pydantic AI come from the end-to-end comparison
(``end_to_end``). Every other target comes from the benchmark module that measures it,
through the interface each such module offers the summary: a synchronous
``measure(*, quick: bool = False) -> dict[str, float]`` whose docstring lists its keys. A
module that is not there, or does not offer that interface or the figure, gives a row
that says it was not measured and why, so that the summary runs on any branch.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

from tests.benchmarks._rows import Row, at_most, not_measured, reference

STRANDS_MISSING = "strands-agents is not installed (the benchmarks extra)"


@dataclass(frozen=True)
class Target:
    """A target measured by ``tests.benchmarks.<module>``: its figure *key* ≤ *limit*."""

    what: str
    module: str
    key: str
    limit: float
    unit: str = "x"


MODULE_TARGETS = (
    Target(
        "building an agent (an OpenAIModel and an Agent), CPU per agent",
        "agent_build",
        "build_ms",
        2.0,
        " ms",
    ),
    Target(
        "an invocation with a SQLite store / without, 1,000 messages, every message durable",
        "store_invocation",
        "sqlite_ratio",
        3.0,
    ),
    Target(
        "an invocation with 200 tools registered / with 1 tool, no handler",
        "tool_scaling",
        "tools_200_over_1",
        2.0,
    ),
    Target(
        "an invocation with 50 policy middleware that return Continue / with no policy",
        "policy_scaling",
        "policy_50_ratio",
        3.0,
    ),
    Target(
        "per Wrap layer, 20 layers against 0 / a hand-written async generator layer",
        "chain_overhead",
        "wrap_layer_20_vs_0",
        1.15,
    ),
    Target(
        "per Wrap layer, 9 layers against 1 (issue 10's method) / a hand-written layer",
        "chain_overhead",
        "wrap_layer_9_vs_1",
        1.15,
    ),
    Target(
        "registry.invoke() without handlers / the bare terminal (issue 10's method)",
        "chain_overhead",
        "invoke_no_handlers",
        1.05,
    ),
    Target(
        "registry.invoke() without handlers around a 2.5 µs terminal / the terminal",
        "chain_overhead",
        "invoke_no_handlers_short",
        1.10,
    ),
)


def _offers_quick(measure: Callable[..., object]) -> bool:
    """Whether *measure* is the summary interface: synchronous, with a keyword-only quick."""
    quick = inspect.signature(measure).parameters.get("quick")
    return (
        quick is not None
        and quick.kind is inspect.Parameter.KEYWORD_ONLY
        and not inspect.iscoroutinefunction(measure)
    )


def summary_figures(module_name: str, quick: bool) -> dict[str, float] | str:
    """``tests.benchmarks.<module_name>``'s figures, or why there are none."""
    qualified = f"tests.benchmarks.{module_name}"
    try:
        module = importlib.import_module(qualified)
    except ModuleNotFoundError as error:
        if error.name != qualified:
            raise  # the module is there, but something it imports is not: a real error
        return f"tests/benchmarks/{module_name}.py is not there"
    measure = getattr(module, "measure", None)
    if not callable(measure) or not _offers_quick(measure):
        return f"tests/benchmarks/{module_name}.py has no measure(*, quick) yet"
    figures: dict[str, float] = measure(quick=quick)
    return figures


def module_rows(quick: bool) -> list[Row]:
    """One row per target of ``MODULE_TARGETS``; each module is measured once."""
    measured: dict[str, dict[str, float] | str] = {}
    rows: list[Row] = []
    for target in MODULE_TARGETS:
        if target.module not in measured:
            measured[target.module] = summary_figures(target.module, quick)
        figures = measured[target.module]
        limit = f"≤ {target.limit:g}{target.unit}"
        if isinstance(figures, str):
            rows.append(not_measured(target.what, limit, figures))
        elif target.key not in figures:
            reason = f"{target.module}.measure() gave no {target.key!r}"
            rows.append(not_measured(target.what, limit, reason))
        else:
            rows.append(at_most(target.what, figures[target.key], target.limit, target.unit))
    return rows


_CONVERSATION = "a growing conversation (each invocation one tool round), CPU"
_MEMORY = "RSS per 100 live agents as shipped"


def end_to_end_targets(figures: dict[str, float]) -> list[Row]:
    """The targets among ``end_to_end.measure()``'s *figures* (its docstring lists the keys)."""
    conversation = f"{_CONVERSATION}, stageware / Strands 1.62 on a shared client"
    memory = f"{_MEMORY}, stageware / Strands 1.62"
    if "conversation_cpu/strands" not in figures:
        return [
            not_measured(conversation, "≤ 0.25x", STRANDS_MISSING),
            not_measured(memory, "≤ 1x", STRANDS_MISSING),
        ]
    per_agent = figures["rss_kib_per_100_agents.stageware"] / 100
    return [
        at_most(conversation, figures["conversation_cpu/strands"], 0.25),
        at_most(memory, figures["rss/strands"], 1.0, note=f" ({per_agent:.0f} KiB per agent)"),
    ]


def end_to_end_references(figures: dict[str, float]) -> list[Row]:
    """The rest of the end-to-end *figures*, for reference, and the A/A noise line."""
    rows: list[Row] = []
    for name, label in (("strands", "Strands"), ("pydantic_ai", "Pydantic AI")):
        if f"conversation_cpu/{name}" not in figures:
            continue
        if name != "strands":  # Strands' are the targets above
            rows.append(
                reference(
                    f"{_CONVERSATION}, stageware / {label}", figures[f"conversation_cpu/{name}"]
                )
            )
            rows.append(reference(f"{_MEMORY}, stageware / {label}", figures[f"rss/{name}"]))
        rows.append(
            reference(
                f"200 agents at once, CPU, stageware / {label}", figures[f"concurrent_cpu/{name}"]
            )
        )
        rows.append(
            reference(
                f"200 agents at once, wall time, stageware / {label}",
                figures[f"concurrent_wall/{name}"],
            )
        )
    names = {"stageware": "stageware", "strands": "Strands", "pydantic_ai": "Pydantic AI"}
    builds = ", ".join(
        f"{label} {figures[f'build_cpu_ms.{name}']:.1f}"
        for name, label in names.items()
        if f"build_cpu_ms.{name}" in figures
    )
    rows.append(Row("for reference: building an agent as shipped, CPU ms", "", builds, None))
    rows.append(aa_row(figures))
    return rows


def cost_rows(end_to_end_figures: dict[str, float], quick: bool) -> list[Row]:
    """Issue 17's rows in the order of its table, then the references and the A/A line."""
    return (
        end_to_end_targets(end_to_end_figures)
        + module_rows(quick)
        + end_to_end_references(end_to_end_figures)
    )


def aa_row(figures: dict[str, float]) -> Row:
    """The noise line: stageware against a second stageware worker in the same run."""
    ratios = [
        value
        for key, value in figures.items()
        if key.endswith("/A-A") and value > 0  # also drops NaN: no ratio for that figure
    ]
    worst = max(ratios, key=lambda ratio: abs(math.log(ratio)))
    return Row(
        "A/A noise: stageware / a second stageware worker, growing conversation CPU "
        "(the end-to-end figure furthest from 1)",
        "≈ 1.00x",
        f"{figures['conversation_cpu/A-A']:.2f}x ({worst:.2f}x)",
        None,
    )
