"""The writing-middleware guide's "Falling back to another model" example runs as written."""

from __future__ import annotations

import pytest

from tests.readme import first_block, page_of


def _example(heading: str) -> str:
    return first_block(heading)


def test_the_fallback_example_prints_the_backups_answer(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code = _example("### Falling back to another model")

    exec(compile(code, page_of("### Falling back to another model"), "exec"), {})

    assert capsys.readouterr().out == "Answered by the backup.\n"
    assert "falling back to ScriptedModel('backup')" in caplog.text
