"""The Semantics page's example of an overflow ending  runs as written."""

from __future__ import annotations

import pytest

from tests.readme import first_block, page_of

HEADING = "## Limits and stop reasons"


def test_the_overflow_example_ends_the_run_and_goes_on_after_a_trim(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = first_block(HEADING, "- **A request too long for the model's context window**")

    exec(compile(code, page_of(HEADING), "exec"), {})

    assert capsys.readouterr().out == "context_window_overflow\nHello!\n"
