"""The README's "Agents as tools" example runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _example(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_sub_agent_example_answers_through_the_parent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _example("### Agents as tools")

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == (
        "['v2', 'tool_call', 'billing'] {'amount': 30}\nYour refund is on its way.\n"
    )
