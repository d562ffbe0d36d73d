"""What the conformance suite reports: one ``ConformanceFailure`` per thing found wrong.

A failure names the middleware, the hook point and the event it was fed, so that the
author can replay the call in a test of their own; ``ConformanceError`` carries a list of
them for callers that prefer an exception (a pytest test, CI).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import final

from pydantic import BaseModel

from stageware._generated.policy_points import HookPoint

__all__ = ["Check", "ConformanceError", "ConformanceFailure", "event_json"]

# Long enough to show a short event whole; a long one is cut in the middle, where the
# conversation's details sit, and keeps its ends: the hook and the fields after the list.
_EVENT_CHARS = 600


class Check(StrEnum):
    """Which check a middleware failed."""

    BUILD = "build"
    """It could not be built with its ``sample`` settings (or the settings given)."""
    CRASH = "crash"
    """It raised."""
    TIMEOUT = "timeout"
    """It did not return within its declared timeout."""
    OUTCOME = "outcome"
    """It returned something other than ``None`` or an outcome allowed at the hook."""
    MUTATION = "mutation"
    """It changed the event it was given, in place."""
    MODIFIED = "modified"
    """Its ``Continue(modified=...)`` does not validate, or changes what the hook keeps."""


@final
@dataclass(frozen=True, slots=True)
class ConformanceFailure:
    """One thing a middleware got wrong.

    Attributes:
        middleware: The middleware's name.
        hook: The hook point it was called at; ``None`` when it could not be built.
        check: Which check failed.
        message: What was wrong, in a sentence.
        event: The event it was fed, as JSON (cut in the middle if long), or ``None``.
    """

    middleware: str
    hook: HookPoint | None
    check: Check
    message: str
    event: str | None = None

    def __str__(self) -> str:
        where = self.middleware if self.hook is None else f"{self.middleware} at {self.hook}"
        text = f"{where}: {self.message}"
        if self.event is not None:
            text += f"\n    event: {self.event}"
        return text


class ConformanceError(AssertionError):
    """A middleware failed the conformance suite.

    An ``AssertionError``, so that pytest reports it as a test failure, not an error.

    Attributes:
        failures: What was found wrong.
    """

    def __init__(self, failures: Sequence[ConformanceFailure]) -> None:
        self.failures: tuple[ConformanceFailure, ...] = tuple(failures)
        count = len(self.failures)
        heading = f"{count} conformance failure{'s' if count != 1 else ''}"
        super().__init__("\n".join([f"{heading}:", *(f"- {f}" for f in self.failures)]))


def event_json(event: BaseModel) -> str:
    """*event* as one line of JSON, cut in the middle when it is long."""
    text = json.dumps(event.model_dump(mode="json", by_alias=True), ensure_ascii=False)
    if len(text) <= _EVENT_CHARS:
        return text
    keep = (_EVENT_CHARS - 40) // 2
    return f"{text[:keep]} ... [{len(text) - 2 * keep} characters cut] ... {text[-keep:]}"
