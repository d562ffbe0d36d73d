"""The durable-scaling benchmark runs, tiny: real worker processes, a real PostgreSQL.

The figures themselves come from ``python -m tests.benchmarks.durable_scaling``; this only
checks that every part of it runs and reports what it should (each measured run finished
with the agent's answer, or the benchmark raises).
"""

from __future__ import annotations

import pytest

from tests.benchmarks import durable_scaling
from tests.ci import skip_or_fail
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, postgres_url

pytest.importorskip("dbos")


def _server() -> str:
    url = postgres_url()
    if url is None:
        skip_or_fail(HOW_TO_RUN_POSTGRES)
    return url


def test_it_measures_one_two_and_four_workers(capsys: pytest.CaptureFixture[str]) -> None:
    scaling = durable_scaling.measure_workers(_server(), sessions=4, rounds=1, count_commits=False)

    assert set(scaling.runs_per_second) == {1, 2, 4}
    assert all(rate > 0 for rate in scaling.runs_per_second.values())
    durable_scaling.print_report(scaling, [])
    assert "runs per second on one PostgreSQL, 4 runs per round" in capsys.readouterr().out


def test_it_sets_checkpointed_invocations_against_plain_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    costs = durable_scaling.measure_steps(_server(), rounds=1)

    assert [cost.backend for cost in costs] == ["sqlite", "postgres"]
    for cost in costs:
        assert set(cost.seconds) == {"plain 1", "durable 1", "plain 5", "durable 5"}
        assert all(seconds > 0 for seconds in cost.seconds.values())
    durable_scaling.print_report(None, costs)
    out = capsys.readouterr().out
    assert "postgres: one more step costs" in out
    assert "sqlite: one more step costs" in out
