"""The README's "Retrying tools" and "Caching model responses" examples run as written."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _example(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_retry_example_answers_after_one_retry(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code = _example("### Retrying tools")

    with caplog.at_level(logging.INFO, logger="stageware.middleware"):
        exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "12 in stock.\n"
    assert "('stock') failed on attempt 1 of 3 (TimeoutError: inventory timed out)" in caplog.text


def test_the_cache_example_answers_the_second_agent_from_the_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _example("### Caching model responses")

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "Paris. 1 1 0\n"
