"""Work whose answer is known is not done again; work whose answer may differ is.

The expensive steps are subprocesses: datamodel-code-generator, ruff (one run for all
modules that need it) and the import check. The record of the last generation, in the
output's ``__pycache__``, lets a run skip each of them for what did not change.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stageware_codegen._checker import Answer, Checker
from stageware_codegen.write.cache import CACHE_DIR, CACHE_FILE

from .conftest import Cli, Project

STAGE_DOC = "      Wraps one call to the model. Middleware"


def _kind(command: list[str]) -> str:
    """Which step a subprocess serves."""
    if "datamodel_code_generator" in command:
        return "datamodel"
    if Path(command[0]).name.startswith("ruff"):
        return "ruff"
    if any("stageware-import-failure" in word for word in command):
        return "import check"
    return "other"


@contextmanager
def subprocesses() -> Generator[list[tuple[str, list[str]]]]:
    """Record every subprocess run in the block, with its kind and command.

    The checkers (the import check, the external types) are started early whether or not
    they will be needed; one counts as run when it is asked.
    """
    original: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run
    original_ask: Callable[[Checker, str], Answer] = Checker.ask
    seen: list[tuple[str, list[str]]] = []

    def run(command: list[str], *args: object, **kwargs: object) -> object:
        seen.append((_kind(command), command))
        return original(command, *args, **kwargs)

    def ask(checker: Checker, request: str) -> Answer:
        seen.append((_kind(checker.command), checker.command))
        return original_ask(checker, request)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "run", run)
        patch.setattr(Checker, "ask", ask)
        yield seen


def _kinds(seen: list[tuple[str, list[str]]]) -> list[str]:
    return sorted(kind for kind, _ in seen if kind != "other")


def test_a_fresh_run_formats_every_module_in_one_ruff_run(project: Project, cli: Cli) -> None:
    with subprocesses() as seen:
        result = cli("generate")

    assert result.code == 0, result.err
    assert _kinds(seen) == ["datamodel", "import check", "ruff"]
    ruff = next(command for kind, command in seen if kind == "ruff")
    assert sorted(Path(word).name for word in ruff if word.endswith(".py")) == sorted(
        path.name for path in project.output.glob("*.py")
    )


def test_regenerating_what_is_there_runs_none_of_them(project: Project, cli: Cli) -> None:
    assert cli("generate").code == 0

    with subprocesses() as seen:
        generated = cli("generate")
        checked = cli("check")

    assert generated.code == checked.code == 0, generated.err + checked.err
    assert generated.out.strip() == "out: 0 written, 9 unchanged, 0 removed"
    assert _kinds(seen) == []


def test_a_schema_edit_formats_and_imports_again_but_converts_nothing(
    project: Project, cli: Cli
) -> None:
    assert cli("generate").code == 0
    project.edit(STAGE_DOC, "      Wraps one model call. Middleware")

    with subprocesses() as seen:
        result = cli("generate")

    assert result.code == 0, result.err
    assert result.out.strip() == "out: 2 written, 7 unchanged, 0 removed"
    assert _kinds(seen) == ["import check", "ruff"]
    ruff = next(command for kind, command in seen if kind == "ruff")
    assert sorted(Path(word).name for word in ruff if word.endswith(".py")) == [
        "contexts.py",
        "stages.py",
    ]


def test_a_payload_edit_converts_again(project: Project, cli: Cli) -> None:
    assert cli("generate").code == 0
    payload = project.root / "schema" / "payloads" / "converse.schema.json"
    text = payload.read_text(encoding="utf-8")
    assert "Who authored a message." in text
    payload.write_text(text.replace("Who authored a message.", "Who wrote a message."))

    with subprocesses() as seen:
        result = cli("generate")

    assert result.code == 0, result.err
    assert _kinds(seen) == ["datamodel", "import check", "ruff"]
    assert "Who wrote a message." in (project.output / "payloads.py").read_text(encoding="utf-8")


def test_a_file_edited_by_hand_is_noticed(project: Project, cli: Cli) -> None:
    assert cli("generate").code == 0
    events = project.output / "events.py"
    generated = events.read_text(encoding="utf-8")
    events.write_text(generated + "# edited\n", encoding="utf-8")

    checked = cli("check")
    regenerated = cli("generate")

    assert checked.code == 1
    assert "+# edited" not in checked.out
    assert "-# edited" in checked.out
    assert regenerated.out.strip() == "out: 1 written, 8 unchanged, 0 removed"
    assert events.read_text(encoding="utf-8") == generated


def test_check_never_writes_the_record(project: Project, cli: Cli) -> None:
    result = cli("check")

    assert result.code == 0, result.err
    assert not (project.output / CACHE_DIR).exists()


def test_a_record_from_another_environment_is_ignored(project: Project, cli: Cli) -> None:
    assert cli("generate").code == 0
    record = project.output / CACHE_DIR / CACHE_FILE
    data = json.loads(record.read_text(encoding="utf-8"))
    record.write_text(json.dumps({**data, "fingerprint": "other"}), encoding="utf-8")

    with subprocesses() as seen:
        result = cli("generate")

    assert result.code == 0, result.err
    assert _kinds(seen) == ["datamodel", "import check", "ruff"]


@pytest.mark.parametrize("garbage", ["", "{not json", "[]", '{"modules": {"a.py": 1}}'])
def test_a_damaged_record_is_no_record(project: Project, cli: Cli, garbage: str) -> None:
    assert cli("generate").code == 0
    (project.output / CACHE_DIR / CACHE_FILE).write_text(garbage, encoding="utf-8")

    result = cli("generate")

    assert result.code == 0, result.err
    assert cli("check").code == 0


def test_a_damaged_module_record_is_no_record(project: Project, cli: Cli) -> None:
    assert cli("generate").code == 0
    record = project.output / CACHE_DIR / CACHE_FILE
    data = json.loads(record.read_text(encoding="utf-8"))
    data["modules"]["events.py"] = ["x"]
    record.write_text(json.dumps(data), encoding="utf-8")

    with subprocesses() as seen:
        result = cli("generate")

    assert result.code == 0, result.err
    assert "ruff" in _kinds(seen)
