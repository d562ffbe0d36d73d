"""The writing-middleware guide's "Approval in one line", "Redacting personal data" and
"Limits" examples run as written, and print what their comments say."""

from __future__ import annotations

import pytest

from tests.readme import first_block, page_of


def _example(heading: str) -> str:
    return first_block(heading)


def _printed_as_commented(code: str) -> str:
    """What the example's comments say it prints: the comment on each print's line, or
    the comment line right after it."""
    said: list[str] = []
    lines = code.splitlines()
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        if not line.startswith("print("):
            continue
        said.append(line.split("  # ", 1)[1] if "  # " in line else after.removeprefix("# "))
    return "\n".join(said) + "\n"


@pytest.mark.parametrize(
    "heading", ["### Approval in one line", "### Redacting personal data", "### Limits\n"]
)
def test_the_example_prints_what_it_says(heading: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = _example(heading)

    exec(compile(code, page_of(heading), "exec"), {})

    assert capsys.readouterr().out == _printed_as_commented(code)
