"""The benchmark summary's last step, the plot, when matplotlib (a benchmarks extra) is absent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmarks.agent_scaling import HISTORY_LENGTHS, Scaling
from tests.benchmarks.plot import redraw_plot


def test_without_matplotlib_the_plot_is_skipped_with_a_note(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    results = [Scaling("stageware", dict.fromkeys(HISTORY_LENGTHS, 0.001))]

    note = redraw_plot(results, tmp_path / "plot.png")

    assert note == "the plot is not redrawn: matplotlib is not installed (the benchmarks extra)"
    assert not (tmp_path / "plot.png").exists()
