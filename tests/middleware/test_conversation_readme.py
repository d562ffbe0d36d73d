"""The agents guide's "Long conversations" examples run as written."""

from __future__ import annotations

import pytest

from tests.readme import page_of, readme_blocks


def _examples(heading: str) -> list[str]:
    return readme_blocks(heading)


def test_the_sliding_window_example_keeps_the_history_and_sends_the_newest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _examples("### Long conversations")[0]

    exec(compile(code, page_of("### Long conversations"), "exec"), {})

    assert capsys.readouterr().out == "80 11\n"


def test_the_summarizing_example_sends_the_summary_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _examples("### Long conversations")[1]

    exec(compile(code, page_of("### Long conversations"), "exec"), {})

    assert capsys.readouterr().out == "Summary of the earlier conversation:\n"
