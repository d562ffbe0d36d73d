"""The typing cases must fail when a generated or runtime type is loosened to ``Any``.

Each case copies the package, loosens one generated annotation, and runs mypy and pyright
over the typing cases against the copy (pyright once for all the copies, each in an
execution environment of its own): an ``assert_type`` stops matching or an expected
error stops being one (which ``warn_unused_ignores`` and
``reportUnnecessaryTypeIgnoreComment`` turn into failures). The unchanged copy must pass
both, so a failure is due to the loosening alone.
"""

from __future__ import annotations

import ast
import json
import os
import queue
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
    "ready-made wrap handler": Loosening(
        "_middleware/_tool_retry.py",
        "self, context: ExecuteToolContext, next_fn: ExecuteToolNext\n"
        "    ) -> AsyncIterator[ExecuteToolEvent]:",
        "self, context: Any, next_fn: Any\n    ) -> Any:",
    ),
    "retried tools are named": Loosening(
        "_middleware/_tool_retry.py", "tools: Iterable[str],", "tools: Iterable[str] | None = None,"
    ),
    "cache backend protocol": Loosening(
        "_middleware/_response_cache.py",
        "backend: CacheBackend | None = None,",
        "backend: Any = None,",
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
    "guide feedback": Loosening(
        "_policy/_outcomes.py", "    feedback: str\n", "    feedback: Any\n"
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
    "agent as tool": Loosening("_host/_agent.py", "    ) -> AgentAsTool:\n", "    ) -> Any:\n"),
    "authenticator": Loosening(
        "_policy/_identity.py",
        "Authenticator: TypeAlias = Callable[[str], Approver]",
        "Authenticator: TypeAlias = Any",
    ),
    "principal roles": Loosening(
        "_policy/_principal.py",
        "roles: frozenset[str] = field(",
        "roles: Any = field(",
    ),
    "cedar on_deny": Loosening(
        "_cedar/_middleware.py",
        'on_deny: Literal["block", "guide"] = "block"',
        'on_deny: Any = "block"',
    ),
    "require_approval tools": Loosening(
        "_middleware/_require_approval.py",
        "tools: list[str] | tuple[str, ...] | Set[str],",
        "tools: Any,",
    ),
    "redaction patterns": Loosening(
        "_middleware/_redact.py",
        "patterns: Iterable[PIIName | PIIPattern] = tuple(BUILTIN_PATTERNS),",
        "patterns: Any = tuple(BUILTIN_PATTERNS),",
    ),
    "sliding window token budget": Loosening(
        "_middleware/_sliding_window.py",
        "    max_tokens: int | None = None\n",
        "    max_tokens: Any = None\n",
    ),
    "bedrock structured output mode": Loosening(
        "_host/models/_bedrock.py",
        'structured_output: Literal["native", "tool"] = "tool",',
        'structured_output: Any = "tool",',
    ),
    "token counter": Loosening("_host/models/_protocol.py", "    ) -> int:", "    ) -> Any:"),
}


def _mypy(package_root: Path, cache: Path) -> tuple[int, str]:
    env = {**os.environ, "MYPYPATH": str(package_root)}
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(cache),
        *CASES,
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    return done.returncode, done.stdout + done.stderr


def _imports_any(source: str) -> bool:
    return any(
        alias.name == "Any" and alias.asname is None
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module in {"typing", "typing_extensions"}
        for alias in node.names
    )


def _copy_package(root: Path) -> Path:
    shutil.copytree(PACKAGE, root / "stageware", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _loosen(root: Path, loosening: Loosening) -> None:
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


UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Copies:
    """The package copies, one per loosening plus the unchanged one, and the checkers'
    verdicts on each, as they come in.

    The checkers start on every copy when the module's first test asks for them, and each
    test waits only for its own copy's verdicts: a run shows a test passing as each copy is
    checked, rather than a silent wait for all of them before the first.
    """

    roots: dict[str, Path]
    pyright: Future[dict[str, list[str]]]
    mypy_runs: dict[str, Future[tuple[int, str]]]

    def mypy(self, name: str) -> tuple[int, str]:
        """mypy's exit status and output on copy *name*."""
        return self.mypy_runs[name].result()

    def pyright_errors(self, name: str) -> list[str]:
        """pyright's errors on copy *name* (one run checks every copy)."""
        return self.pyright.result()[name]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Copies]:
    """Every copy, loosened; one pyright run over all of them, and mypy on each.

    pyright spends most of a run loading the libraries the cases import (pydantic, the
    model SDKs); one run with an execution environment per copy loads them once, where a
    run per copy would load them again for each of the dozens of loosenings. mypy runs
    meanwhile, a copy at a time on each of two threads, in the order the tests ask.
    """
    workspace = tmp_path_factory.mktemp("bite")
    roots: dict[str, Path] = {}
    for index, name in enumerate([UNCHANGED, *sorted(LOOSENINGS)]):
        # The copy sits in its environment's root, which pyright searches first for the
        # imports of every file under it: the cases' and the copy's own alike.
        root = _copy_package(workspace / f"env{index}")
        if name != UNCHANGED:
            _loosen(root, LOOSENINGS[name])
        roots[name] = root
        for case in CASES:
            shutil.copy(case, root)
    # Each mypy run takes a cache of its own from here and gives it back (only the copied
    # package differs between copies; a cache is not safe to share between two runs).
    caches: queue.SimpleQueue[Path] = queue.SimpleQueue()
    for _ in range(2):
        caches.put(tmp_path_factory.mktemp("mypy-cache"))

    def check(name: str) -> tuple[int, str]:
        cache = caches.get()
        try:
            return _mypy(roots[name], cache)
        finally:
            caches.put(cache)

    with ThreadPoolExecutor(max_workers=1) as pyright, ThreadPoolExecutor(max_workers=2) as mypy:
        copies = Copies(
            roots,
            pyright.submit(_pyright, workspace, roots),
            {name: mypy.submit(check, name) for name in roots},
        )
        try:
            yield copies
        finally:
            # A run stopped early (-x, a failure in the fixture's user) checks no more copies.
            mypy.shutdown(cancel_futures=True)


def _pyright(workspace: Path, roots: dict[str, Path]) -> dict[str, list[str]]:
    """pyright's errors on every copy under *workspace*, by copy name."""
    config = {
        "include": ["."],
        # The copies are checked where the cases use them, not file by file.
        "exclude": ["*/stageware"],
        "executionEnvironments": [{"root": root.name} for root in roots.values()],
        "pythonVersion": "3.11",
        "typeCheckingMode": "strict",
        "enableTypeIgnoreComments": False,
        "reportUnnecessaryTypeIgnoreComment": "error",
    }
    (workspace / "pyrightconfig.json").write_text(json.dumps(config))
    # pyright finds `src/` of the project it runs in on its own, so it runs in a workspace
    # of its own.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--outputjson",
            "--pythonpath",
            sys.executable,
            "-p",
            str(workspace),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=workspace,
        check=False,
    )
    report = json.loads(done.stdout)
    errors: dict[str, list[str]] = {name: [] for name in roots}
    by_environment = {root.name: name for name, root in roots.items()}
    for diagnostic in report["generalDiagnostics"]:
        if diagnostic["severity"] != "error":
            continue
        environment = Path(diagnostic["file"]).relative_to(workspace.resolve()).parts[0]
        errors[by_environment[environment]].append(
            f"{Path(diagnostic['file']).name}:{diagnostic['range']['start']['line'] + 1}: "
            f"{diagnostic['message']}"
        )
    return errors


def test_the_unchanged_package_passes(copies: Copies) -> None:
    mypy = copies.mypy(UNCHANGED)

    assert mypy[0] == 0, mypy[1]
    assert copies.pyright_errors(UNCHANGED) == []


@pytest.mark.parametrize("name", sorted(LOOSENINGS))
def test_loosening_a_type_fails_the_typing_cases(name: str, copies: Copies) -> None:
    mypy = copies.mypy(name)

    assert mypy[0] == 1, mypy[1]
    assert copies.pyright_errors(name) != [], f"pyright accepts the cases with {name} loosened"
