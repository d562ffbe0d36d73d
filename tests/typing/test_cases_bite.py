"""The typing cases must fail when a generated or runtime type is loosened to ``Any``.

Each case copies the package, loosens one generated annotation, and runs mypy and pyright
over the typing cases against the copy: an ``assert_type`` stops matching or an expected
error stops being one (which ``warn_unused_ignores`` and
``reportUnnecessaryTypeIgnoreComment`` turn into failures). The unchanged copy must pass
both, so a failure is due to the loosening alone.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "stageware"
CASES = sorted(str(path) for path in Path(__file__).parent.glob("*_cases.py"))


@dataclass(frozen=True)
class Loosening:
    """Replace the *occurrence*-th (0-based) *annotation* in *module* (a path in the package)."""

    module: str
    annotation: str
    loosened: str
    occurrence: int = 0


LOOSENINGS = {
    "overload handler": Loosening(
        "_runtime/_middleware_host.py", "handler: Callable[[C], C]", "handler: Any"
    ),
    "wrap overload handler": Loosening(
        "_runtime/_middleware_host.py", "handler: WrapHandler[C, E]", "handler: Any"
    ),
    "next_fn returns a generator": Loosening(
        "_runtime/_handlers.py",
        "NextFn: TypeAlias = Callable[[C], AsyncGenerator[E, None]]",
        "NextFn: TypeAlias = Callable[[C], AsyncIterator[E]]",
    ),
    "replace parameter": Loosening(
        "_generated/contexts.py", "messages: Messages | Unset = UNSET", "messages: Any = UNSET"
    ),
    "replace tool parameter": Loosening(
        "_generated/contexts.py", "tool: AgentTool | None | Unset = UNSET", "tool: Any = UNSET"
    ),
    "from_host parameter": Loosening(
        "_generated/contexts.py", "        messages: Messages,\n", "        messages: Any,\n"
    ),
    "stage token": Loosening(
        "_generated/stages.py",
        "MiddlewareStage[InvokeModelContext, InvokeModelResult, InvokeModelEvent]",
        "MiddlewareStage[Any, Any, Any]",
    ),
    "next alias": Loosening(
        "_generated/stages.py", "NextFn[InvokeModelContext, InvokeModelEvent]", "Any"
    ),
    "output handler alias": Loosening(
        "_generated/stages.py", "OutputHandler[InvokeModelResult]", "Any"
    ),
    "event union": Loosening(
        "_generated/events.py", "ToolStreamEvent | ToolInterruptEvent | ToolResultEvent", "Any"
    ),
    "result type": Loosening(
        "_generated/results.py", "MiddlewareResult[EventLoopStopEvent]", "MiddlewareResult[Any]"
    ),
    "context field": Loosening(
        "_generated/contexts.py", "    tool_choice: ToolChoice | None\n", "    tool_choice: Any\n"
    ),
    "agent field": Loosening(
        "_generated/contexts.py", "    agent: AgentHandle\n", "    agent: Any\n"
    ),
    "cancel signal field": Loosening(
        "_generated/contexts.py", "    cancel_signal: CancelSignal\n", "    cancel_signal: Any\n"
    ),
    "invocation state field": Loosening(
        "_generated/contexts.py",
        "    invocation_state: dict[str, Any]\n",
        "    invocation_state: Any\n",
        1,
    ),
    "event field": Loosening(
        "_generated/events.py", "    stop_reason: StopReason\n", "    stop_reason: Any\n"
    ),
    "loop stop event field": Loosening(
        "_generated/events.py", "    stop_reason: StopReason\n", "    stop_reason: Any\n", 1
    ),
    "payload key": Loosening(
        "_generated/payloads.py", "    toolUseId: str\n", "    toolUseId: Any\n"
    ),
    "hook event field": Loosening(
        "_generated/policy_events.py", "    tool_name: str\n", "    tool_name: Any\n"
    ),
    "hook point table": Loosening(
        "_generated/policy_points.py", "Final[Mapping[HookPoint, HookPointSpec]]", "Final[Any]"
    ),
    "hook event payload field": Loosening(
        "_generated/policy_events.py", "    usage: Usage\n", "    usage: Any\n"
    ),
    "decorator event": Loosening(
        "_generated/policy_decorator.py",
        "MiddlewareTarget[ToolCallEvent, _EnvT_co, _OutT_contra]",
        "MiddlewareTarget[Any, _EnvT_co, _OutT_contra]",
    ),
    "decorator result": Loosening(
        "_generated/policy_decorator.py",
        "-> Callable[[MiddlewareTarget[ToolCallEvent, _EnvT_co, _OutT_contra]], _DefT_co]",
        "-> Any",
    ),
    "decorator function target": Loosening(
        "_generated/policy_decorator.py",
        "Callable[[_EventT, _EnvT], Coroutine[Any, Any, _OutT]]",
        "Callable[[_EventT, _EnvT], Any]",
    ),
    "decorator class target": Loosening(
        "_generated/policy_decorator.py",
        "type[PolicyCallable[_EventT, _EnvT, _OutT]]",
        "type[Any]",
    ),
    "decorator without fail_mode": Loosening(
        "_generated/policy_decorator.py", ") -> FailModeRequired: ...", ") -> Any: ..."
    ),
    "decorator hooks": Loosening(
        "_generated/policy_decorator.py",
        "hooks: HookCollection[HookPoint | str],",
        "hooks: Any,",
    ),
    "suspend approvers": Loosening(
        "_policy/_outcomes.py",
        "approvers: Collection[str] | None = None",
        "approvers: Any = None",
    ),
    "structured output": Loosening(
        "_host/_agent_result.py", "def output(self) -> OutputT:", "def output(self) -> Any:"
    ),
    "output_type overload": Loosening(
        "_host/_agent.py", ") -> AgentResult[OutputT]: ...", ") -> AgentResult[Any]: ..."
    ),
    "plain run overload": Loosening(
        "_host/_agent.py", ") -> AgentResult[None]: ...", ") -> AgentResult[Any]: ..."
    ),
    "structured output request field": Loosening(
        "_generated/contexts.py",
        "    structured_output_model: type[Any] | None = None\n",
        "    structured_output_model: Any = None\n",
    ),
    "anthropic structured output option": Loosening(
        "_host/models/_anthropic.py",
        'structured_output: Literal["native", "tool"] = "native"',
        'structured_output: Any = "native"',
    ),
    "authenticator": Loosening(
        "_policy/_identity.py",
        "Authenticator: TypeAlias = Callable[[str], Approver]",
        "Authenticator: TypeAlias = Any",
    ),
    "bedrock structured output mode": Loosening(
        "_host/models/_bedrock.py",
        'structured_output: Literal["native", "tool"] = "tool",',
        'structured_output: Any = "tool",',
    ),
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


def _run_both(
    package_root: Path, tmp_path: Path, mypy_cache: Path
) -> tuple[tuple[int, str], tuple[int, str]]:
    """Run both checkers side by side (they are independent) and wait for both."""
    mypy = _mypy(package_root, mypy_cache)
    pyright = _pyright(package_root, tmp_path / "workspace")
    return _finish(mypy), _finish(pyright)


def _imports_any(source: str) -> bool:
    return any(
        alias.name == "Any" and alias.asname is None
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module in {"typing", "typing_extensions"}
        for alias in node.names
    )


def _copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(PACKAGE, root / "stageware", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for all cases: only the copied package differs between them."""
    return tmp_path_factory.mktemp("mypy-cache")


def test_the_unchanged_package_passes(tmp_path: Path, mypy_cache: Path) -> None:
    root = _copy_package(tmp_path)

    mypy, pyright = _run_both(root, tmp_path, mypy_cache)

    assert mypy[0] == 0, mypy[1]
    assert pyright[0] == 0, pyright[1]


@pytest.mark.parametrize("name", sorted(LOOSENINGS))
def test_loosening_a_type_fails_the_typing_cases(
    name: str, tmp_path: Path, mypy_cache: Path
) -> None:
    loosening = LOOSENINGS[name]
    root = _copy_package(tmp_path)
    target = root / "stageware" / loosening.module
    source = target.read_text()
    parts = source.split(loosening.annotation)
    assert len(parts) > loosening.occurrence + 1, (
        f"{loosening.annotation!r} (occurrence {loosening.occurrence}) not found in "
        f"{loosening.module}: update LOOSENINGS"
    )
    before = loosening.annotation.join(parts[: loosening.occurrence + 1])
    after = loosening.annotation.join(parts[loosening.occurrence + 1 :])
    text = before + loosening.loosened + after
    if not _imports_any(text):
        text = text.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\nfrom typing import Any\n",
            1,
        )
    assert _imports_any(text)  # Otherwise the checkers would fail for the wrong reason.
    target.write_text(text)

    mypy, pyright = _run_both(root, tmp_path, mypy_cache)

    assert mypy[0] == 1, mypy[1]
    assert pyright[0] == 1, pyright[1]
