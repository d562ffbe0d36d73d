"""The README's "Falling back to another model" example runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _example(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    return section.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_fallback_example_prints_the_backups_answer(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code = _example("### Falling back to another model")

    exec(compile(code, str(README), "exec"), {})

    assert capsys.readouterr().out == "Answered by the backup.\n"
    assert "falling back to ScriptedModel('backup')" in caplog.text
