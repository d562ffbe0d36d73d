"""The agents guide's structured-output example runs as written and prints what it says."""

from __future__ import annotations

import pytest

from tests.readme import first_block, page_of


def _example() -> str:
    return first_block("### Structured output\n")


def test_the_structured_output_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    exec(
        compile(_example(), page_of("### Structured output\n"), "exec"),
        {"__name__": "readme_example"},
    )

    assert capsys.readouterr().out == "4.0\n"
