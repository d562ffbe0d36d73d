"""Events with ``keys`` read like read-only dicts, at run time and for both checkers.

Without ``__contains__`` and ``__iter__``, ``"stop" in event`` fell back to
``event[0]`` and raised ``KeyError: 0``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stageware import ModelMessageEvent, ModelStopReason, ToolResultEvent

from .conftest import Cli, import_package

DATA = Path(__file__).parent / "data"

_MESSAGE: Any = {"role": "assistant", "content": []}
_USAGE: Any = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
_METRICS: Any = {"latencyMs": 4}


@pytest.fixture
def translate(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The translate schema (an event with two keys) generated and imported."""
    shutil.copy(DATA / "translate.yaml", tmp_path / "translate.yaml")
    monkeypatch.chdir(tmp_path)
    result = cli("generate", "--schema", "translate.yaml", "--output", "pkg/keys_api")
    assert result.code == 0, result.err
    return import_package(tmp_path / "pkg" / "keys_api", monkeypatch)


def test_a_single_key_event_supports_in_iteration_keys_and_get() -> None:
    stop = ModelStopReason("end_turn", _MESSAGE, _USAGE, _METRICS)

    assert "stop" in stop
    assert "other" not in stop
    assert 0 not in stop
    assert list(stop) == ["stop"]
    assert stop.keys() == ("stop",)
    assert stop.get("stop") == stop["stop"] == ("end_turn", _MESSAGE, _USAGE, _METRICS)
    assert stop.get("other") is None
    assert stop.get("other", 5) == 5
    assert dict(stop) == {"stop": stop["stop"]}


def test_a_single_field_key_gives_the_field() -> None:
    result: Any = {"toolUseId": "t1", "status": "success", "content": []}
    event = ToolResultEvent(result)

    assert "tool_result" in event
    assert event.get("tool_result") is result
    assert list(event) == ["tool_result"]


def test_an_event_without_keys_is_not_a_mapping() -> None:
    # The checkers reject `in` on it; at run time it raises instead of guessing.
    event: Any = ModelMessageEvent(_MESSAGE)
    assert not hasattr(event, "keys")
    with pytest.raises(TypeError):
        "message" in event  # noqa: B015 - the comparison is what raises


def test_several_keys_in_declaration_order(translate: ModuleType) -> None:
    done = translate.Translated("hallo", 3)

    assert list(done) == ["summary", "text"]
    assert done.keys() == ("summary", "text")
    assert "summary" in done
    assert "text" in done
    assert "tokens" not in done
    assert done.get("summary") == ("hallo", 3)
    assert done.get("text") == "hallo"
    assert done.get("tokens", "none") == "none"
    assert dict(done) == {"summary": ("hallo", 3), "text": "hallo"}


_USES = """\
from typing import Literal, assert_type

from keys_api import Translated

done = Translated("hallo", 3)
assert_type("text" in done, bool)
for key in done:
    assert_type(key, Literal["summary", "text"])
    assert_type(done[key], tuple[str, int] | str)
assert_type(done.keys(), tuple[Literal["summary", "text"], ...])
assert_type(done.get("summary"), tuple[str, int])
assert_type(done.get("text", 0), str)
name: str = "tokens"
assert_type(done.get(name), object | None)
assert_type(done.get(name, 0), object | int)
"""


def test_the_mapping_methods_are_typed_for_both_checkers(
    translate: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "uses.py").write_text(_USES, encoding="utf-8")
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps(
            {
                "include": ["uses.py"],
                "extraPaths": ["pkg"],
                "typeCheckingMode": "strict",
                "pythonVersion": "3.11",
            }
        ),
        encoding="utf-8",
    )
    checkers = {
        "mypy": [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "uses.py"],
        "pyright": [sys.executable, "-m", "pyright", "--pythonpath", sys.executable],
    }
    for name, command in checkers.items():
        completed = subprocess.run(
            command,
            cwd=tmp_path,
            env={**os.environ, "MYPYPATH": str(tmp_path / "pkg")},
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0, f"{name}:\n{completed.stdout}{completed.stderr}"
