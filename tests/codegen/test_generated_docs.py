"""Generated docstrings only say what is true of the generated code."""

from __future__ import annotations

from pathlib import Path

import pytest

from stageware import AgentStreamContext, ExecuteToolContext, InvokeModelContext

from .conftest import Cli, import_package

_NONE_IS_A_REPLACEMENT = "an explicit `None` is a replacement"

_FIXED = """\
version: 1
events:
  Done:
    doc: The result.
stages:
  Fixed:
    doc: A stage whose context cannot be replaced.
    result: Done
    events: [Done]
    context:
      request:
        type: str
        doc: The request.
        copy: reference
        replace: forbidden
"""


def _text(doc: str | None) -> str:
    """A docstring with its line wrapping undone."""
    return " ".join(str(doc).split())


def test_none_is_called_a_replacement_only_where_a_parameter_accepts_none() -> None:
    # system_prompt: str | list[...] | None and tool: AgentTool | None accept None;
    # AgentStream's only parameter, invocation_state: dict[str, Any], does not.
    assert _NONE_IS_A_REPLACEMENT in _text(InvokeModelContext.replace.__doc__)
    assert _NONE_IS_A_REPLACEMENT in _text(ExecuteToolContext.replace.__doc__)
    assert _NONE_IS_A_REPLACEMENT not in _text(AgentStreamContext.replace.__doc__)
    assert "Omitted fields keep their current value" in _text(AgentStreamContext.replace.__doc__)


def test_a_context_without_replaceable_fields_says_so(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fixed.yaml").write_text(_FIXED, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli("generate", "--schema", "fixed.yaml", "--output", "pkg/fixed_api").code == 0

    api = import_package(tmp_path / "pkg" / "fixed_api", monkeypatch)

    doc = str(api.FixedContext.replace.__doc__)
    assert doc.startswith("Return a copy of this context; none of its fields can be replaced.")
    assert "Omitted fields" not in doc
    assert "Args:" not in doc
