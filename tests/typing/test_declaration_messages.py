"""What mypy and pyright say about a wrong ``@middleware(...)``, word for word.

The typing cases prove that an error is reported, by its code; this proves that its
wording names the problem. Both checkers run with their defaults (plus mypy's
``--strict``), as a user's project would, on a module of their own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

MISSING_FAIL_MODE = """\
from stageware.policy import PolicyEnv, ToolCallEvent, middleware


@middleware(hooks=["tool.before"])
async def in_a_list(event: ToolCallEvent, env: PolicyEnv) -> None:
    return None


@middleware(hooks=("tool.before", "tool.after"), band="platform")
async def in_a_tuple(event: object, env: PolicyEnv) -> None:
    return None


@middleware(hooks=["tool.before"])
class OnAClass:
    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> None:
        return None
"""
# mypy reports a class decorator's error on the `class` line, pyright on the decorator's.
MYPY_LINES = {4, 9, 15}
PYRIGHT_LINES = {4, 9, 14}


def _run(command: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _error_lines(output: str, marker: str) -> dict[int, str]:
    """Line number -> text of each error, from `<file>:<line>:...` lines naming *marker*."""
    found: dict[int, str] = {}
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if marker in line and " error: " in line:
            number = int(line.split(marker, 1)[1].split(":")[1])
            # pyright puts the detail of an error on the lines after it.
            detail = [lines[index + 1]] if index + 1 < len(lines) else []
            found[number] = found.get(number, "") + " ".join([line, *detail])
    return found


@dataclass(frozen=True)
class Checkers:
    """mypy and pyright, started together on the declarations; each test waits for one."""

    mypy: subprocess.Popen[str]
    pyright: subprocess.Popen[str]


@pytest.fixture(scope="module")
def checkers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checkers]:
    directory = tmp_path_factory.mktemp("declarations")
    module = directory / "declarations.py"
    module.write_text(MISSING_FAIL_MODE)
    (directory / "pyrightconfig.json").write_text('{"include": ["declarations.py"]}')
    python = sys.executable
    cache = str(directory / "cache")
    started = Checkers(
        _run([python, "-m", "mypy", "--strict", "--cache-dir", cache, module.name], directory),
        _run([python, "-m", "pyright", "--pythonpath", python, module.name], directory),
    )
    yield started
    for process in (started.mypy, started.pyright):
        process.kill()  # a no-op once it has finished; not left running after a failure
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_mypy_names_a_missing_fail_mode(checkers: Checkers) -> None:
    mypy_output, _ = checkers.mypy.communicate()

    mypy_errors = _error_lines(mypy_output, "declarations.py")
    assert set(mypy_errors) == MYPY_LINES, mypy_output
    assert all('"FailModeRequired" not callable' in e for e in mypy_errors.values()), mypy_output
    assert "overload" not in mypy_output, mypy_output
    assert "hooks" not in mypy_output, mypy_output


def test_pyright_names_a_missing_fail_mode(checkers: Checkers) -> None:
    pyright_output, _ = checkers.pyright.communicate()

    pyright_errors = _error_lines(pyright_output, "declarations.py")
    assert set(pyright_errors) == PYRIGHT_LINES, pyright_output
    assert all(
        'Object of type "FailModeRequired" is not callable' in e for e in pyright_errors.values()
    ), pyright_output
    assert "overload" not in pyright_output.lower(), pyright_output
