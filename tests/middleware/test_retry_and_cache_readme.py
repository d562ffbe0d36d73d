"""The writing-middleware guide's "Retrying tools" and "Caching model responses" examples run
as written."""

from __future__ import annotations

import logging

import pytest

from tests.readme import first_block, page_of


def _example(heading: str) -> str:
    return first_block(heading)


def test_the_retry_example_answers_after_one_retry(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code = _example("### Retrying tools")

    with caplog.at_level(logging.INFO, logger="stageware.middleware"):
        exec(compile(code, page_of("### Retrying tools"), "exec"), {})

    assert capsys.readouterr().out == "12 in stock.\n"
    assert "('stock') failed on attempt 1 of 3 (TimeoutError: inventory timed out)" in caplog.text


def test_the_cache_example_answers_the_second_agent_from_the_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _example("### Caching model responses")

    exec(compile(code, page_of("### Caching model responses"), "exec"), {})

    assert capsys.readouterr().out == "Paris. 1 1 0\n"
