"""The typing cases must fail when a generated type is loosened to ``Any``.

Each case copies the package, loosens one generated annotation, and runs mypy and pyright
over the typing cases against the copy: an ``assert_type`` stops matching or an expected
error stops being one (which ``warn_unused_ignores`` and
``reportUnnecessaryTypeIgnoreComment`` turn into failures). The unchanged copy must pass
both, so a failure is due to the loosening alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "stageware"
CASES = sorted(str(path) for path in Path(__file__).parent.glob("*_cases.py"))

# (generated module, exact annotation, what it becomes)
LOOSENINGS = {
    "overload handler": ("host.py", "handler: Callable[[C], C]", "handler: Any"),
    "replace parameter": (
        "contexts.py",
        "messages: Messages | Unset = UNSET",
        "messages: Any = UNSET",
    ),
    "stage token": (
        "stages.py",
        "MiddlewareStage[InvokeModelContext, InvokeModelResult, InvokeModelEvent]",
        "MiddlewareStage[Any, Any, Any]",
    ),
    "context field": (
        "contexts.py",
        "    tool_choice: ToolChoice | None\n",
        "    tool_choice: Any\n",
    ),
    "event field": ("events.py", "    stop_reason: StopReason\n", "    stop_reason: Any\n"),
}


Checker = subprocess.Popen[str]


def _start(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> Checker:
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env
    )


def _finish(checker: Checker) -> tuple[int, str]:
    output, _ = checker.communicate()
    return checker.returncode, output


def _mypy(package_root: Path, cache: Path) -> Checker:
    env = {**os.environ, "MYPYPATH": str(package_root)}
    return _start(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            *CASES,
        ],
        ROOT,
        env,
    )


def _pyright(package_root: Path, workspace: Path) -> Checker:
    # pyright finds `src/` of the project it runs in on its own, so it runs in a workspace
    # of its own whose only extra import path is the copy.
    workspace.mkdir()
    for case in CASES:
        shutil.copy(case, workspace)
    config = {
        "include": ["."],
        "extraPaths": [str(package_root)],
        "pythonVersion": "3.11",
        "typeCheckingMode": "strict",
        "enableTypeIgnoreComments": False,
        "reportUnnecessaryTypeIgnoreComment": "error",
    }
    (workspace / "pyrightconfig.json").write_text(json.dumps(config))
    return _start(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, "-p", str(workspace)],
        workspace,
    )


def _run_both(package_root: Path, tmp_path: Path) -> tuple[tuple[int, str], tuple[int, str]]:
    """Run both checkers side by side (they are independent) and wait for both."""
    mypy = _mypy(package_root, tmp_path / "cache")
    pyright = _pyright(package_root, tmp_path / "workspace")
    return _finish(mypy), _finish(pyright)


def _copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(PACKAGE, root / "stageware", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_unchanged_package_passes(tmp_path: Path) -> None:
    root = _copy_package(tmp_path)

    mypy, pyright = _run_both(root, tmp_path)

    assert mypy[0] == 0, mypy[1]
    assert pyright[0] == 0, pyright[1]


@pytest.mark.parametrize("name", sorted(LOOSENINGS))
def test_loosening_a_generated_type_fails_the_typing_cases(name: str, tmp_path: Path) -> None:
    module, annotation, loosened = LOOSENINGS[name]
    root = _copy_package(tmp_path)
    target = root / "stageware" / "_generated" / module
    source = target.read_text()
    assert source.count(annotation) >= 1, f"{annotation!r} not found in {module}: update LOOSENINGS"
    text = source.replace(annotation, loosened, 1)
    if "from typing import Any" not in text and "import Any" not in text:
        text = text.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\nfrom typing import Any\n",
            1,
        )
    target.write_text(text)

    mypy, pyright = _run_both(root, tmp_path)

    assert mypy[0] == 1, mypy[1]
    assert pyright[0] == 1, pyright[1]
