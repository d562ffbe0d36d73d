"""``in_own_task``: a generator advanced in a task of its own, in lockstep with its reader."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
import pytest

from stageware._host._task_stream import in_own_task

pytestmark = pytest.mark.anyio


async def counting(steps: list[str], ended: list[str]) -> AsyncGenerator[int, None]:
    try:
        for number in range(3):
            steps.append(f"before {number}")
            await anyio.sleep(0)
            yield number
    finally:
        ended.append("closed")


async def test_the_generator_advances_only_when_the_reader_asks() -> None:
    steps: list[str] = []
    ended: list[str] = []
    seen: list[int] = []

    async with aclosing(in_own_task(counting(steps, ended))) as numbers:
        async for number in numbers:
            seen.append(number)
            await anyio.sleep(0.01)  # time for a generator that ran ahead to show it
            assert len(steps) == number + 1

    assert seen == [0, 1, 2]
    assert ended == ["closed"]


async def test_closing_early_closes_the_generator_before_the_reader_goes_on() -> None:
    steps: list[str] = []
    ended: list[str] = []

    async with aclosing(in_own_task(counting(steps, ended))) as numbers:
        async for _ in numbers:
            break

    assert ended == ["closed"]
    assert steps == ["before 0"]


async def test_an_error_reaches_the_reader_as_itself() -> None:
    async def failing() -> AsyncGenerator[int, None]:
        yield 1
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        async for _ in in_own_task(failing()):
            pass


async def test_a_reader_cancelled_while_waiting_cancels_the_step_and_waits_for_it() -> None:
    cleanup: list[str] = []

    async def stuck() -> AsyncGenerator[int, None]:
        try:
            yield 1
            await anyio.sleep_forever()
            yield 2
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.05)  # cleanup that takes a while
            cleanup.append("done")

    with anyio.move_on_after(0.1) as scope:
        async for _ in in_own_task(stuck()):
            pass

    assert scope.cancelled_caught
    # The reader went on only after the generator's cleanup had run.
    assert cleanup == ["done"]
