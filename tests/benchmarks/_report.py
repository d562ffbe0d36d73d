"""Printing a benchmark's timings as ratios to a baseline configuration."""

from __future__ import annotations

import statistics


def print_ratios(
    timings: dict[str, list[float]], baseline: str, calls: int, unit: str, scale: float
) -> None:
    """Print each configuration's median time relative to *baseline*'s, one line each.

    The absolute time per call is printed in *unit* (seconds times *scale*), for context.
    """
    reference = statistics.median(timings[baseline])
    width = max(len("configuration"), *map(len, timings))
    print(f"{'configuration':<{width}} {'ratio':>7} {unit:>9}")
    for name, samples in timings.items():
        median = statistics.median(samples)
        print(f"{name:<{width}} {median / reference:>7.2f} {median / calls * scale:>9.2f}")
