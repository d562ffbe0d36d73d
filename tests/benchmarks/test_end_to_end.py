"""The end-to-end comparison's own parts: its loopback server, its stageware worker, its sums.

Cheap checks only: the comparison itself runs from ``python -m
tests.benchmarks.end_to_end``, with Strands and Pydantic AI from the ``benchmarks`` extra.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.benchmarks._e2e_frameworks import API_KEY, MODEL_ID
from tests.benchmarks._loopback_openai import ANSWER, TOOL_NAME
from tests.benchmarks.end_to_end import (
    AA,
    FIGURES,
    STAGEWARE,
    Sizes,
    figures_of,
    loopback_server,
    run_worker,
    summarise,
)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with loopback_server() as url:
        yield url


async def _stream(base_url: str, messages: list[Any]) -> list[Any]:
    async with openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY) as client:
        stream = await client.chat.completions.create(
            model=MODEL_ID,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in stream]


def test_the_server_asks_for_the_tool_in_chunks_the_sdk_parses(base_url: str) -> None:
    chunks = asyncio.run(_stream(base_url, [{"role": "user", "content": "hi"}]))

    calls = [
        call
        for chunk in chunks
        if chunk.choices
        for call in chunk.choices[0].delta.tool_calls or []
    ]
    assert [(call.id, call.function.name) for call in calls] == [("call_1", TOOL_NAME)]
    assert json.loads(calls[0].function.arguments or "") == {"text": "ping"}
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 15


def test_the_server_answers_a_tool_result_with_text(base_url: str) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "pong"},
    ]
    chunks = asyncio.run(_stream(base_url, messages))

    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == ANSWER
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"


def test_the_server_answers_a_request_that_does_not_stream(base_url: str) -> None:
    async def create() -> Any:
        async with openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY) as client:
            return await client.chat.completions.create(
                model=MODEL_ID, messages=[{"role": "user", "content": "hi"}]
            )

    completion = asyncio.run(create())

    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == TOOL_NAME


def test_one_round_of_the_stageware_worker_gives_every_figure(base_url: str) -> None:
    sizes = Sizes(agents=2, conversation=2, concurrent=2)

    figures = figures_of(run_worker(STAGEWARE, base_url, sizes), sizes)

    assert set(figures) == set(FIGURES)
    assert all(value > 0 for name, value in figures.items() if name != "rss"), figures


def test_a_failing_worker_is_reported_with_its_error(base_url: str) -> None:
    sizes = Sizes(agents=1, conversation=1, concurrent=1)

    with pytest.raises(
        RuntimeError, match=r"(?s)the langchain worker failed \(exit 2\).*invalid choice"
    ):
        run_worker("langchain", base_url, sizes)


def _round(conversation_cpu: float) -> dict[str, float]:
    return dict.fromkeys(FIGURES, 1.0) | {"conversation_cpu": conversation_cpu}


def test_ratios_are_paired_by_round_and_the_median_is_taken() -> None:
    # Round by round stageware / strands is 2/3, 2/3 and 3: the median is 2/3. The
    # medians of each side alone (4 and 3) would give 4/3.
    samples = {
        STAGEWARE: [_round(2.0), _round(4.0), _round(9.0)],
        "strands": [_round(3.0), _round(6.0), _round(3.0)],
        AA: [_round(2.0), _round(4.0), _round(10.0)],
    }

    figures = summarise(samples)

    assert figures["conversation_cpu/strands"] == pytest.approx(2 / 3)
    assert figures["conversation_cpu/A-A"] == pytest.approx(1.0)
    assert figures["conversation_cpu_ms_per_turn.stageware"] == 4.0
    assert "conversation_cpu_ms_per_turn.A-A" not in figures
