"""The agents guide's "Agents as tools" example runs as written."""

from __future__ import annotations

import pytest

from tests.readme import first_block, page_of


def _example(heading: str) -> str:
    return first_block(heading)


def test_the_sub_agent_example_answers_through_the_parent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _example("### Agents as tools")

    exec(compile(code, page_of("### Agents as tools"), "exec"), {})

    assert capsys.readouterr().out == (
        "['v2', 'tool_call', 'billing'] {'amount': 30}\nYour refund is on its way.\n"
    )
