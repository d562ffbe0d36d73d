"""The shape of a policy spec file, as pydantic models that forbid unknown keys.

These models check what a file can be checked for alone: its keys, the kinds of its
values, the names of hook points, bands and fail modes, the syntax of timeouts and of
``use``. What depends on the middleware named (whether hooks narrow, a fail mode only
tightens, settings fit) is checked when the entry is built (``PolicyEntry``).

Validation is strict: YAML already gives each value its kind, so a quoted ``"2"`` is not
a number and ``true`` is not 1.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from stageware._generated.policy_points import Band, HookPoint
from stageware._policy._choices import choose
from stageware._policy._declare import FailMode
from stageware._policy._durations import parse_timeout

__all__ = ["SpecEntry", "SpecFile", "is_reference"]

# ``package.module:attribute`` (the attribute may be dotted, as in entry points), or a
# plugin's qualified name (``acme.no_weekend_refunds``).
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_USE = re.compile(rf"{_DOTTED}(?::{_DOTTED})?")


def is_reference(use: str) -> bool:
    """Whether *use* names a module attribute (``package.module:attribute``)."""
    return ":" in use


def _use(value: object) -> object:
    if isinstance(value, str) and not _USE.fullmatch(value):
        raise ValueError(
            f"{value!r} names no middleware: write a plugin's qualified name "
            "('acme.no_weekend_refunds') or 'package.module:attribute'"
        )
    return value


def _version(value: object) -> object:
    # A Literal compares by equality, and true == 1.0 == 1: only the integer 1 is version 1.
    if isinstance(value, bool | float):
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": "1"})
    return value


def _hook(value: object) -> HookPoint:
    return choose(HookPoint, value, "hook point")


def _band(value: object) -> Band | None:
    return None if value is None else choose(Band, value, "band")


def _fail_mode(value: object) -> FailMode | None:
    return None if value is None else choose(FailMode, value, "fail mode")


def _timeout(value: object) -> timedelta | None:
    try:
        return parse_timeout(value, "timeout")
    except (TypeError, ValueError) as exc:
        # pydantic reports ValueError only; the path already says it is the timeout.
        raise ValueError(str(exc).removeprefix("timeout: ")) from None


class SpecEntry(BaseModel):
    """One middleware to install; keys left out keep what the middleware declares."""

    # Built when the first spec is read, not when the policy layer is imported.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    use: Annotated[str, BeforeValidator(_use)]
    """A plugin's qualified name, or ``package.module:attribute``."""
    band: Annotated[Band | None, BeforeValidator(_band)] = None
    """The band to run in; ``baseline`` only in the org baseline profile."""
    hooks: (
        Annotated[list[Annotated[HookPoint, BeforeValidator(_hook)]], Field(min_length=1)] | None
    ) = None
    """A subset of the declared hook points."""
    settings: dict[str, Any] | None = None
    """Settings for the middleware's config model."""
    fail_mode: Annotated[FailMode | None, BeforeValidator(_fail_mode)] = None
    """``closed`` to tighten an ``open`` middleware; never the reverse."""
    timeout: Annotated[timedelta | None, BeforeValidator(_timeout)] = None
    """A shorter timeout than the declared one; never longer."""


class SpecFile(BaseModel):
    """A policy spec, or an org baseline profile: the same shape."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    version: Annotated[Literal[1], BeforeValidator(_version)]
    """The format's version; 1 is the only one so far."""
    middleware: list[SpecEntry] = Field(default_factory=list[SpecEntry])
    """The middleware to install, in the order they run within a band."""
    retry_budgets: dict[
        Annotated[HookPoint, BeforeValidator(_hook)], Annotated[int, Field(ge=0)]
    ] = Field(default_factory=dict[HookPoint, int])
    """How many times a step may be redone at a hook point that allows Retry."""
    blocked_message: Annotated[str, Field(min_length=1)] | None = None
    """What the user reads when a middleware blocks the run."""
    escalated_message: Annotated[str, Field(min_length=1)] | None = None
    """What the user reads when a middleware hands the run to a person."""
