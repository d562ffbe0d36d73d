"""The README's "Long conversations" examples run as written."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples(heading: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :].split("\n### ", 2)[0]
    return [block.split("```\n", 1)[0] for block in section.split("```python\n")[1:]]


def test_the_sliding_window_example_keeps_the_history_and_sends_the_newest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _examples("### Long conversations")[0]

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "80 11\n"


def test_the_summarizing_example_sends_the_summary_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _examples("### Long conversations")[1]

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "Summary of the earlier conversation:\n"
