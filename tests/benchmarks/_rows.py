"""The rows of the benchmark summary's table: a target against its measurement."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One line of the table: what was measured, its target, and the measurement."""

    what: str
    target: str
    measured: str
    met: bool | None  # None: no target (shown for reference), or not measured


def at_most(what: str, value: float, limit: float, unit: str = "x", note: str = "") -> Row:
    """A target met when *value* is at most *limit*; *note* follows the measurement."""
    return Row(what, f"≤ {limit:g}{unit}", f"{value:.2f}{unit}{note}", value <= limit)


def at_least(what: str, value: float, limit: float) -> Row:
    return Row(what, f"≥ {limit:g}x", f"{value:.2f}x", value >= limit)


def reference(what: str, value: float, unit: str = "x") -> Row:
    return Row(f"for reference: {what}", "", f"{value:.2f}{unit}", None)


def not_measured(what: str, target: str, reason: str) -> Row:
    """A row whose measurement could not be made here, and why."""
    return Row(what, target, f"not measured: {reason}", None)


def print_table(rows: list[Row]) -> None:
    print("| what | target | measured | |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        verdict = "" if row.met is None else ("met" if row.met else "**missed**")
        print(f"| {row.what} | {row.target} | {row.measured} | {verdict} |")
