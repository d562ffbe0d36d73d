"""A fixed, reproducible set of examples per hook point: an event and what ``env`` says.

Hypothesis draws them (derandomized, without its example database), and they are kept
for the process: every middleware checked at a hook sees the same examples, shortest event
first, so a failure names the smallest event that shows it. Nothing is shrunk: an example
is checked once, so a middleware that sleeps past its timeout costs one timeout per hook,
not one per shrinking step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import final

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from stageware._generated.policy_points import HookPoint
from stageware._policy._outcomes import Retry
from stageware._policy._rules import ALLOWED, DEFAULT_RETRY_BUDGET

from ._strategies import event_strategy

__all__ = ["Example", "examples_for"]


@final
@dataclass(frozen=True, slots=True)
class Example:
    """One call to check: the event, and the parts of ``PolicyEnv`` that vary.

    Attributes:
        event: The event; a middleware gets a deep copy, never this one (it is shared).
        session_id: The session id ``env`` carries (``None``: an agent without a session).
        attempt: The attempt ``env`` carries; above 1 only where Retry is allowed.
    """

    event: BaseModel
    session_id: str | None
    attempt: int


def _example_strategy(point: HookPoint) -> st.SearchStrategy[Example]:
    # A redone step is only seen where Retry can redo it.
    last_attempt = DEFAULT_RETRY_BUDGET + 1 if Retry in ALLOWED[point] else 1
    return st.builds(
        Example,
        event=event_strategy(point),
        session_id=st.none() | st.sampled_from(["session-1", "s:ünï/2"]),
        attempt=st.integers(min_value=1, max_value=last_attempt),
    )


@functools.cache
def examples_for(point: HookPoint, count: int) -> tuple[Example, ...]:
    """Up to *count* examples for *point*, the same on every call, shortest event first."""
    drawn: list[Example] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=False,
    )
    @given(_example_strategy(point))
    def collect(example: Example) -> None:
        drawn.append(example)

    collect()
    return tuple(sorted(drawn, key=lambda example: len(example.event.model_dump_json())))
