"""The README's example of an overflow ending ("Running an agent") runs as written."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_overflow_example_ends_the_run_and_goes_on_after_a_trim(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("- **A request too long for the model's context window**") :]
    code = textwrap.dedent(section.split("```python\n", 1)[1].split("```\n", 1)[0])

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "context_window_overflow\nHello!\n"
