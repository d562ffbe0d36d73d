"""What both conversation managers share: the budget, its settings and the per-agent counts.

A manager's budget covers the whole request: what every request sends besides its messages
(system prompt, tool specs: ``fixed_tokens``) comes off it first, and a ``reserve`` stays
free for the estimate's error (``usable_tokens``). ``sent_window`` cuts a request to a
budget, ``reduce_by_half`` to half of one the model refused. Each agent's messages are
counted by a ``RunningTokens`` of its own (``counter_for``), so a call costs what changed.
"""

from __future__ import annotations

import weakref
from typing import cast

from stageware import InvokeModelContext, estimate_tokens

from ._window import UNLIMITED, RunningTokens, fit_window, truncate_tool_results

__all__ = [
    "check_budget_settings",
    "counter_for",
    "fixed_tokens",
    "no_counters",
    "reduce_by_half",
    "sent_window",
    "usable_tokens",
]


def usable_tokens(max_tokens: int, reserve: float) -> int:
    """The part of a *max_tokens* budget a request may fill, *reserve* kept free."""
    return int(max_tokens * (1.0 - reserve))


def fixed_tokens(context: InvokeModelContext) -> int:
    """The estimate of what every request of the call sends besides its messages."""
    return estimate_tokens((), system_prompt=context.system_prompt, tool_specs=context.tool_specs)


def no_counters() -> weakref.WeakKeyDictionary[object, RunningTokens]:
    """An empty per-agent map of ``RunningTokens`` (a dataclass field's default)."""
    return weakref.WeakKeyDictionary()


def counter_for(
    counters: weakref.WeakKeyDictionary[object, RunningTokens], agent: object
) -> RunningTokens:
    """*agent*'s counter in *counters*; a new one each call for a handle without weak refs."""
    try:
        counter = counters.get(agent)
        if counter is None:
            counter = counters[agent] = RunningTokens()
    except TypeError:
        return RunningTokens()
    return counter


def reduce_by_half(failed: InvokeModelContext, *, truncate: bool) -> InvokeModelContext | None:
    """A request half the estimate of *failed*'s, or ``None`` when none is smaller."""
    fixed = fixed_tokens(failed)
    whole = fit_window(failed.messages, UNLIMITED)
    smaller = sent_window(failed, (whole.tokens + fixed) // 2, None, truncate=truncate)
    return None if smaller is failed else smaller


def sent_window(
    context: InvokeModelContext, usable: int, max_messages: int | None, *, truncate: bool
) -> InvokeModelContext:
    """*context* with the valid suffix of its messages that fits *usable* tokens.

    *usable* covers the whole request: the system prompt and tool specs are taken off it
    first. Returns *context* itself when nothing would change.
    """
    fixed = fixed_tokens(context) if usable != UNLIMITED else 0
    budget = max(0, usable - fixed)
    found = fit_window(context.messages, budget, max_messages)
    window = context.messages[found.start :] if found.start else context.messages
    tokens = found.tokens
    if not found.fits and truncate:
        shortened = truncate_tool_results(window, found.tokens, budget)
        if shortened is not window:
            window = shortened
            tokens = estimate_tokens(window)
    if window is context.messages:
        return context
    return context.replace(messages=window, projected_input_tokens=tokens + fixed)


def check_budget_settings(manager: str, *, reserve: float, **limits: int | None) -> None:
    """Refuse settings a manager cannot work with, naming the manager and the setting.

    Each of *limits* must be an int of at least 1, or ``None``; *reserve* a share in [0, 1).
    """
    for name, value in limits.items():
        given = cast(object, value)
        if given is None:
            continue
        if not isinstance(given, int) or isinstance(given, bool):
            raise TypeError(f"{manager}: {name} must be an int or None, got {given!r}")
        if given < 1:
            raise ValueError(f"{manager}: {name} must be at least 1, got {given}")
    given_reserve = cast(object, reserve)
    if not isinstance(given_reserve, (int, float)) or isinstance(given_reserve, bool):
        raise TypeError(f"{manager}: reserve must be a float, got {given_reserve!r}")
    if not 0.0 <= given_reserve < 1.0:
        raise ValueError(f"{manager}: reserve must be in [0, 1), got {given_reserve}")
