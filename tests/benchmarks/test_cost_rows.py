"""The summary's rows for issue 17: measured where a module offers its figures, else said why."""

from __future__ import annotations

import math
import sys
import types

import pytest

from tests.benchmarks import _cost_rows
from tests.benchmarks._cost_rows import (
    STRANDS_MISSING,
    Target,
    aa_row,
    end_to_end_references,
    end_to_end_targets,
    module_rows,
    summary_figures,
)
from tests.benchmarks._rows import Row


def _install(monkeypatch: pytest.MonkeyPatch, name: str, module: types.ModuleType) -> None:
    monkeypatch.setitem(sys.modules, f"tests.benchmarks.{name}", module)


def _module_measuring(figures: dict[str, float], seen: list[bool]) -> types.ModuleType:
    module = types.ModuleType("fake_benchmark")

    def measure(*, quick: bool = False) -> dict[str, float]:
        seen.append(quick)
        return figures

    module.measure = measure  # type: ignore[attr-defined]
    return module


def test_a_module_that_is_not_there_is_named() -> None:
    assert summary_figures("no_such_benchmark", quick=True) == (
        "tests/benchmarks/no_such_benchmark.py is not there"
    )


def test_a_module_without_the_summary_interface_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("old_benchmark")

    async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
        return {}

    module.measure = measure  # type: ignore[attr-defined]
    _install(monkeypatch, "old_benchmark", module)

    assert summary_figures("old_benchmark", quick=True) == (
        "tests/benchmarks/old_benchmark.py has no measure(*, quick) yet"
    )


def test_a_module_is_measured_once_for_all_its_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    _install(monkeypatch, "fake_benchmark", _module_measuring({"a": 1.5, "b": 0.5}, seen))
    monkeypatch.setattr(
        _cost_rows,
        "MODULE_TARGETS",
        (
            Target("a", "fake_benchmark", "a", 1.0),
            Target("b", "fake_benchmark", "b", 1.0),
            Target("c", "fake_benchmark", "c", 1.0),
            Target("d", "no_such_benchmark", "d", 2.0, " ms"),
        ),
    )

    rows = module_rows(quick=True)

    assert seen == [True]
    assert rows == [
        Row("a", "≤ 1x", "1.50x", False),
        Row("b", "≤ 1x", "0.50x", True),
        Row("c", "≤ 1x", "not measured: fake_benchmark.measure() gave no 'c'", None),
        Row(
            "d", "≤ 2 ms", "not measured: tests/benchmarks/no_such_benchmark.py is not there", None
        ),
    ]


def _end_to_end_figures(*frameworks: str) -> dict[str, float]:
    figures = {
        "rss_kib_per_100_agents.stageware": 8_000.0,
        "build_cpu_ms.stageware": 1.25,
        "conversation_cpu/A-A": 1.02,
        "rss/A-A": math.nan,
        "concurrent_wall/A-A": 0.9,
    }
    for name in frameworks:
        figures |= {
            f"build_cpu_ms.{name}": 4.0,
            f"conversation_cpu/{name}": 0.2,
            f"concurrent_cpu/{name}": 0.5,
            f"concurrent_wall/{name}": 0.6,
            f"rss/{name}": 1.1,
        }
    return figures


def test_without_strands_its_targets_are_not_measured() -> None:
    figures = _end_to_end_figures()

    rows = end_to_end_targets(figures)

    assert [(row.target, row.measured) for row in rows] == [
        ("≤ 0.25x", f"not measured: {STRANDS_MISSING}"),
        ("≤ 1x", f"not measured: {STRANDS_MISSING}"),
    ]
    assert end_to_end_references(figures)[-2].measured == "stageware 1.2"


def test_with_strands_the_targets_are_judged() -> None:
    figures = _end_to_end_figures("strands", "pydantic_ai")

    conversation, memory = end_to_end_targets(figures)

    assert (conversation.measured, conversation.met) == ("0.20x", True)
    assert (memory.measured, memory.met) == ("1.10x (80 KiB per agent)", False)
    references = end_to_end_references(figures)
    assert references[-2].measured == "stageware 1.2, Strands 4.0, Pydantic AI 4.0"
    assert all(row.met is None for row in references)


def test_the_aa_line_shows_the_figure_furthest_from_one_and_skips_missing_ratios() -> None:
    row = aa_row(_end_to_end_figures())

    assert row.measured == "1.02x (0.90x)"
