"""Mutable defaults: a list or mapping default gets a fresh value per instance.

Whether a default is mutable is decided by its value, not by how the type is spelled: a
payload alias (``Messages``), a TypedDict (``Metrics``) and ``Any`` all hold lists or
dicts that a dataclass may not share.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .conftest import Cli, Project, import_package


@pytest.fixture
def api(project: Project, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    project.edit(
        "        doc: Messages to send to the model.\n        copy: deep\n",
        "        doc: Messages to send to the model.\n        copy: deep\n        default: []\n",
    )
    project.edit(
        "metrics: {type: Metrics, doc: Timing of the call.}",
        "metrics: {type: Metrics, doc: Timing of the call., default: {latencyMs: 1}}",
    )
    project.edit(
        "        doc: The validated structured output, when one was requested.\n"
        "        default: null\n",
        "        doc: The validated structured output, when one was requested.\n"
        "        default: [1, 2]\n",
    )
    result = cli("generate", "--output", "pkg/mutable_api")
    assert result.code == 0, result.err
    return import_package(project.root / "pkg" / "mutable_api", monkeypatch)


def _context(api: Any, **fields: Any) -> Any:
    return api.InvokeModelContext.from_host(
        agent=object(),
        system_prompt=None,
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model=object(),
        **fields,
    )


def test_a_payload_alias_list_default_is_fresh_per_context(api: Any) -> None:
    first, second = _context(api), _context(api)
    assert first.messages == [] == second.messages
    assert first.messages is not second.messages

    direct = api.InvokeModelContext(
        agent=object(),
        system_prompt=None,
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model=object(),
    )
    assert direct.messages == []
    assert direct.messages is not first.messages


def test_from_host_still_copies_a_given_value(api: Any) -> None:
    messages = [{"role": "user", "content": []}]
    context = _context(api, messages=messages)
    assert context.messages == messages
    assert context.messages is not messages


def test_typed_dict_and_any_defaults_are_fresh_per_event(api: Any) -> None:
    message = {"role": "assistant", "content": []}
    usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
    first = api.ModelStopReason("end_turn", message, usage)
    second = api.ModelStopReason("end_turn", message, usage)
    assert first.metrics == {"latencyMs": 1}
    assert first.metrics is not second.metrics

    stop = api.EventLoopStopEvent("end_turn", message, {"latencyMs": 1}, {})
    other = api.EventLoopStopEvent("end_turn", message, {"latencyMs": 1}, {})
    assert stop.structured_output == [1, 2]
    assert stop.structured_output is not other.structured_output


_FACTORY_CLASH = """\
version: 1
events:
  A:
    doc: Its field b_c and A_b's field c would share a factory name.
    fields:
      b_c: {type: "list[int]", default: [1]}
  A_b:
    doc: The other half of the clash.
    fields:
      c: {type: "dict[str, int]", default: {x: 1}}
stages:
  S:
    doc: A stage.
    result: A
    events: [A, A_b]
    context:
      count: {type: int, doc: A field., copy: reference}
"""


def test_factories_whose_names_would_clash_stay_apart(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clash.yaml").write_text(_FACTORY_CLASH, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = cli("generate", "--schema", "clash.yaml", "--output", "pkg/clash_api")
    assert result.code == 0, result.err

    api: Any = import_package(tmp_path / "pkg" / "clash_api", monkeypatch)

    assert api.A().b_c == [1]
    assert api.A_b().c == {"x": 1}
