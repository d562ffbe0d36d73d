"""The README's structured-output example runs as written and prints what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Structured output\n") :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_structured_output_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(_example(), str(README), "exec"), {"__name__": "readme_example"})

    assert capsys.readouterr().out == "4.0\n"
