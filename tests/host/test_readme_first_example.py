"""The README's first example ("Running an agent") runs as written, on its scripted model.

Its other models and the MCP tools are comments: one line each to swap in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _first_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Running an agent") :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_first_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = _first_example()

    exec(compile(code, str(README), "exec"), {})

    stop_reason, text = capsys.readouterr().out.split(" ", 1)
    assert stop_reason == "end_turn"
    assert text.startswith("Your order has shipped. {")


def test_each_swap_is_one_commented_line() -> None:
    swaps = [line for line in _first_example().splitlines() if line.startswith("# model = ")]

    assert [line.split("(", 1)[0] for line in swaps] == [
        "# model = OpenAIModel",
        "# model = AnthropicModel",
        "# model = BedrockModel",
    ]
