"""A small hand-declared stage, so chain rules are tested independently of the schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar, Final, TypeAlias, final

from stageware import UNSET, MiddlewareResult, MiddlewareStage, Unset


@final
@dataclass(frozen=True, kw_only=True, slots=True)
class EchoContext:
    text: str
    trail: list[str] = field(default_factory=list)

    def replace(self, *, text: str | Unset = UNSET) -> EchoContext:
        return EchoContext(text=self.text if isinstance(text, Unset) else text, trail=self.trail)


@final
@dataclass(frozen=True, slots=True)
class Chunk:
    text: str


@final
@dataclass(frozen=True, slots=True)
class Done:
    text: str


@final
@dataclass(frozen=True, slots=True)
class Paused:
    """An interrupt event: the call halted for a human, so it has no result."""

    is_interrupt: ClassVar[bool] = True
    question: str


@final
class EchoResult(MiddlewareResult[Done]):
    """Result subclasses inherit the wrapper's dataclass behaviour; no decorator needed."""


EchoEvent: TypeAlias = Chunk | Done | Paused

EchoStage: Final[MiddlewareStage[EchoContext, EchoResult, EchoEvent]] = MiddlewareStage(
    "Echo", result_type=EchoResult, result_event=Done
)


async def echo_terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
    """Yield one chunk per word, then the result."""
    context.trail.append("terminal")
    for word in context.text.split():
        yield Chunk(word)
    yield Done(context.text)


async def collect(events: AsyncIterator[EchoEvent]) -> list[EchoEvent]:
    return [event async for event in events]
