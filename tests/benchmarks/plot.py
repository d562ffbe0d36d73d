"""The Performance page's plot: invocation time against history length, one line per configuration.

matplotlib is a benchmark-only dependency (the ``benchmarks`` extra), imported here only;
without it the plot is skipped with a note. Both axes are logarithmic, so a flat line is
a cost that does not grow with the conversation and a line at 45 degrees is one that
grows in proportion to it.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.agent_scaling import HISTORY_LENGTHS, Scaling

PLOT_PATH = Path(__file__).resolve().parents[2] / "docs" / "images" / "agent_scaling.png"


def plot_scaling(results: list[Scaling], path: Path = PLOT_PATH) -> Path:
    """Draw *results* to a PNG at *path* and return the path."""
    import matplotlib

    matplotlib.use("Agg")  # No display: the plot only goes to a file.
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    for result in results:
        times = [result.seconds[length] * 1e3 for length in HISTORY_LENGTHS]
        axes.plot(HISTORY_LENGTHS, times, marker="o", label=result.name)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(HISTORY_LENGTHS, [f"{length:,}" for length in HISTORY_LENGTHS])
    axes.set_xlabel("messages already in the conversation")
    axes.set_ylabel("ms per invocation (two model calls, one tool call)")
    axes.set_title("Invocation time against history length")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def redraw_plot(results: list[Scaling], path: Path = PLOT_PATH) -> str:
    """Draw *results* to *path*; say where, or why the plot was not redrawn."""
    try:
        plot_scaling(results, path)
    except ModuleNotFoundError as error:
        if error.name != "matplotlib":
            raise
        # Skipped like Strands: the measurements are complete without the picture.
        return "the plot is not redrawn: matplotlib is not installed (the benchmarks extra)"
    return f"plot written to {path}"
