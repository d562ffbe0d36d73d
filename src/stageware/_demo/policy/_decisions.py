"""The policy trace as the demo prints it: one row per decision record.

A row shows the hook point, the middleware, its band, the outcome, the duration and
what the record says (reason, error, notes). Plain ``Continue`` records in a row (a
stream's chunks, mostly) are folded into one row with a count, which keeps the trace
short without hiding that each chunk was decided.

Durations are shown to the millisecond, and the demo's middleware take far less, so
the trace reads the same on every run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from stageware.policy import Decision

__all__ = ["decision_rows"]


@dataclass(frozen=True, slots=True)
class _Row:
    record: Decision
    count: int
    slowest_ms: float


def decision_rows(decisions: Sequence[Decision]) -> list[str]:
    """The rows that show *decisions*, in order."""
    return [_format(row) for row in _fold(decisions)]


def _plain(record: Decision) -> bool:
    return (
        record.outcome == "continue"
        and not record.modified
        and record.error is None
        and not record.notes
    )


def _fold(decisions: Sequence[Decision]) -> Iterator[_Row]:
    pending: _Row | None = None
    for record in decisions:
        if (
            pending is not None
            and _plain(record)
            and _plain(pending.record)
            and (record.hook, record.middleware, record.attempt)
            == (pending.record.hook, pending.record.middleware, pending.record.attempt)
        ):
            pending = _Row(
                pending.record, pending.count + 1, max(pending.slowest_ms, record.duration_ms)
            )
            continue
        if pending is not None:
            yield pending
        pending = _Row(record, 1, record.duration_ms)
    if pending is not None:
        yield pending


def _format(row: _Row) -> str:
    record = row.record
    outcome = record.outcome + (" (modified)" if record.modified else "")
    if row.count > 1:
        outcome += f" x{row.count}"
    if record.attempt > 1:
        outcome += f" (attempt {record.attempt})"
    duration = "<1ms" if row.slowest_ms < 1 else f"{row.slowest_ms:.0f}ms"
    said = [f"error: {record.error}"] if record.error else []
    if record.reason and not record.error:
        said.append(record.reason)
    said.extend(record.notes)
    detail = "; ".join(said)
    return (
        f"{record.hook:<15} {record.middleware:<16}  {record.band:<9}  {outcome:<20} "
        f"{duration:>5}  {detail}"
    ).rstrip()
