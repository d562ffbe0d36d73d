"""The wheel as a user installs it: two packages, the shipped schema, the command line.

The wheel is built once, offline (hatchling is a dev dependency, so no build isolation),
and installed with ``pip --no-deps`` into fresh virtual environments. Their dependencies
are this environment's installed distributions, linked in rather than downloaded: the
runtime's alone for one environment, the runtime's and the ``codegen`` extra's for the
other. So "without the codegen extra" means jinja2 and friends are really absent.

A user's CI is reproduced too: packages generated from schemas outside the repository,
and code written on them, type-checked by mypy --strict and pyright strict against the
installed wheel, where stageware is a library and not the project being checked (pyright
judges a library's exports more strictly than the project's own modules).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import stageware

REPO = Path(__file__).resolve().parents[1]
USER_SCHEMA = REPO / "tests" / "codegen" / "data" / "translate.yaml"
SCHEMA = REPO / "schema"
GENERATED = REPO / "src" / "stageware" / "_generated"
CODEGEN_MODULES = ("jinja2", "yaml", "datamodel_code_generator", "ruff")


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment with the wheel installed."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def run(self, *argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run a program of the environment (``stageware``, ``python``) in *cwd*."""
        program, *rest = argv
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        return subprocess.run(
            [str(self.root / "bin" / program), *map(str, rest)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("wheel")
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), *offline, "--wheel-dir", str(directory)],
        check=True,
    )
    (built,) = directory.glob("stageware-*.whl")
    return built


def _closure(requirement: str) -> Iterator[metadata.Distribution]:
    """The installed distributions *requirement* needs, transitively, itself excluded."""
    pending = [Requirement(requirement)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        wanted = pending.pop()
        key = (canonicalize_name(wanted.name), frozenset(wanted.extras))
        if key in seen:
            continue
        seen.add(key)
        distribution = metadata.distribution(wanted.name)
        if key[0] != "stageware":
            yield distribution
        for line in distribution.requires or []:
            needed = Requirement(line)
            extras = wanted.extras | {""}
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in extras
            ):
                pending.append(needed)


def _make_venv(root: Path, requirement: str, wheel: Path) -> Venv:
    """A venv holding *wheel* and, linked from this environment, what *requirement* needs."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    venv = Venv(root)
    site = Path(
        subprocess.run(
            [str(venv.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    linked: set[Path] = set()
    for distribution in _closure(requirement):
        for file in distribution.files or []:
            if file.parts[0] == "..":  # a console script (ruff's binary, for one)
                source = Path(str(distribution.locate_file(file))).resolve()
                target = root / "bin" / source.name
            elif file.parts[0] == "__pycache__":
                continue
            else:
                source = Path(str(distribution.locate_file(file.parts[0])))
                target = site / file.parts[0]
            if target not in linked and not target.exists():
                target.symlink_to(source)
                linked.add(target)
    pip = [sys.executable, "-m", "pip", "--python", str(venv.python)]
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--quiet", str(wheel)], check=True)
    return venv


@pytest.fixture(scope="module")
def runtime_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel without the codegen extra."""
    return _make_venv(tmp_path_factory.mktemp("runtime") / "venv", "stageware", wheel)


@pytest.fixture(scope="module")
def codegen_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel with the codegen extra."""
    return _make_venv(tmp_path_factory.mktemp("codegen") / "venv", "stageware[codegen]", wheel)


def _without_banner(text: str) -> str:
    """The module without its three banner lines, which name the schema's paths."""
    return text.split("\n", 3)[3]


def test_the_wheel_holds_the_runtime_and_the_generator_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()

    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"stageware", "stageware_codegen"}
    shipped = {name for name in names if name.startswith("stageware_codegen/schema/")}
    assert shipped == {
        f"stageware_codegen/schema/{path.relative_to(SCHEMA).as_posix()}"
        for path in SCHEMA.rglob("*")
        if path.is_file()
    }
    assert "stageware_codegen/render/templates/stages.py.jinja" in names
    # The policy demo reads its spec and org profile from the package.
    assert {"stageware/_demo/policy/policy.yaml", "stageware/_demo/policy/org.yaml"} <= set(names)
    assert {"stageware/py.typed", "stageware_codegen/py.typed"} <= set(names)
    # The console serves its pages and its style sheet from the package.
    console = Path(stageware.__file__).parent / "_console"
    assert {
        f"stageware/_console/{path.relative_to(console).as_posix()}"
        for folder in ("templates", "static")
        for path in (console / folder).rglob("*")
        if path.is_file()
    } <= set(names)
    assert "stageware/_console/templates/approval.html" in names
    assert wheel.name.startswith(f"stageware-{stageware.__version__}-")


def test_without_the_codegen_extra_the_demo_runs(runtime_venv: Venv, tmp_path: Path) -> None:
    probe = (
        "import importlib.util, stageware\n"
        "print(stageware.__file__)\n"
        f"print(*(name for name in {CODEGEN_MODULES} if importlib.util.find_spec(name)))\n"
    )
    where, present = runtime_venv.run("python", "-c", probe, cwd=tmp_path).stdout.splitlines()
    assert where.startswith(str(runtime_venv.root))
    assert present == "", "test bug: the codegen extra is installed"

    version = runtime_venv.run("stageware", "--version", cwd=tmp_path)
    demo = runtime_venv.run("stageware", "demo", cwd=tmp_path)

    assert version.stdout == f"stageware {stageware.__version__}\n"
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.rstrip().endswith("every check passed")


def test_without_any_extra_the_ready_made_middleware_import(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    probe = "from stageware.middleware import ModelFallback; print(ModelFallback.__module__)"
    imported = runtime_venv.run("python", "-c", probe, cwd=tmp_path)

    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == "stageware._middleware._model_fallback\n"


def test_without_the_dbos_extra_stageware_dbos_names_the_extra(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    imported = runtime_venv.run("python", "-c", "import stageware.dbos", cwd=tmp_path)

    assert imported.returncode == 1
    assert imported.stderr.rstrip().endswith(
        "ImportError: stageware.dbos needs the 'dbos' package, from the `dbos` extra: "
        "pip install -e '.[dbos]' in a clone, "
        "or pip install 'stageware[dbos] @ git+https://<your-git-host>/stageware.git'"
    )


def test_without_the_codegen_or_postgres_extra_the_policy_commands_run(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    made = runtime_venv.run(
        "python",
        "-c",
        "import stageware; stageware.SQLiteSessionStore('s.db').session_ids()",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr

    escalations = runtime_venv.run(
        "stageware", "policy", "escalations", "--store", "s.db", cwd=tmp_path
    )
    approvals = runtime_venv.run(
        "stageware", "policy", "approvals", "--store", "s.db", cwd=tmp_path
    )
    postgres = runtime_venv.run(
        "stageware", "policy", "approvals", "--store", "postgresql://app@db/app", cwd=tmp_path
    )

    assert (escalations.returncode, escalations.stdout) == (0, "no open or claimed escalations\n")
    assert (approvals.returncode, approvals.stdout) == (0, "no suspended approvals\n")
    assert postgres.returncode == 2
    assert postgres.stderr == (
        "stageware policy approvals: --store postgresql://...: the PostgreSQL store needs the "
        "`postgres` extra: pip install -e '.[postgres]' in a clone, "
        "or pip install 'stageware[postgres] @ git+https://<your-git-host>/stageware.git'\n"
    )


def test_without_the_codegen_extra_generate_names_the_extra(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    assert runtime_venv.run("stageware", "schema", "export", "schema", cwd=tmp_path).returncode == 0

    result = runtime_venv.run(
        "stageware", "generate", "--schema", "schema/stages.yaml", "--output", "api", cwd=tmp_path
    )

    assert result.returncode == 2
    assert "needs the `codegen` extra: pip install -e '.[codegen]' in a clone" in result.stderr


def test_without_the_policy_extra_the_policy_demo_names_the_extra(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    result = runtime_venv.run("stageware", "demo", "policy", cwd=tmp_path)

    assert result.returncode == 2
    assert "needs PyYAML, from the `policy` extra: pip install -e '.[policy]'" in result.stderr


def test_the_policy_demo_runs_from_the_wheel_with_pyyaml(
    codegen_venv: Venv, tmp_path: Path
) -> None:
    # The codegen extra brings PyYAML too; the demo's YAML files come from the wheel.
    result = codegen_venv.run("stageware", "demo", "policy", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("every check passed")


def test_without_the_policy_extra_policy_check_names_the_extra(
    runtime_venv: Venv, tmp_path: Path
) -> None:
    (tmp_path / "policy.yaml").write_text("version: 1\n", encoding="utf-8")

    result = runtime_venv.run("stageware", "policy", "check", "policy.yaml", cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr == (
        "stageware policy check: reading a policy spec needs PyYAML, from the `policy` extra: "
        "pip install -e '.[policy]' in a clone, "
        "or pip install 'stageware[policy] @ git+https://<your-git-host>/stageware.git'\n"
    )


def test_the_exported_schema_generates_stagewares_own_surface(
    codegen_venv: Venv, tmp_path: Path
) -> None:
    exported = codegen_venv.run("stageware", "schema", "export", "my_schema", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    for path in SCHEMA.rglob("*"):
        if path.is_file():
            copy = tmp_path / "my_schema" / path.relative_to(SCHEMA)
            assert copy.read_bytes() == path.read_bytes()

    result = codegen_venv.run(
        "stageware",
        "generate",
        "--schema",
        "my_schema/stages.yaml",
        "--output",
        "out/api",
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stderr
    fresh = {
        path.name: _without_banner(path.read_text(encoding="utf-8"))
        for path in (tmp_path / "out" / "api").glob("*.py")
    }
    checked_in = {
        path.name: _without_banner(path.read_text(encoding="utf-8"))
        for path in GENERATED.glob("*.py")
    }
    assert fresh == checked_in


# A harness's own code on two generated packages: its own schema's, and one generated from
# stageware's exported schema under a name of its own.
USER_CODE = """\
from collections.abc import AsyncIterator
from typing import assert_type

from my_stages import InvokeModelContext, InvokeModelStage
from translate_api import (
    TranslateContext,
    TranslateEvent,
    TranslateNext,
    TranslateResult,
    TranslateStage,
    Translated,
)

from stageware import MiddlewareRegistry

registry = MiddlewareRegistry()
registry.add_middleware(TranslateStage.Input, lambda c: c.replace(text=c.text.upper()))


async def tag(context: TranslateContext, next_fn: TranslateNext) -> AsyncIterator[TranslateEvent]:
    async for event in next_fn(context.replace(tags=["checked"])):
        yield event


def note(result: TranslateResult) -> TranslateResult:
    assert_type(result.result, Translated)
    return result


def brief(context: InvokeModelContext) -> InvokeModelContext:
    return context.replace(system_prompt="Be brief.")


registry.add_middleware(TranslateStage, tag)
registry.add_middleware(TranslateStage.Output, note)
registry.add_middleware(InvokeModelStage.Input, brief)
"""


def _user_project(codegen_venv: Venv, root: Path) -> Path:
    """A project outside the repository: two schemas, their packages, code on them."""
    root.mkdir()
    (root / "schemas").mkdir()
    shutil.copy(USER_SCHEMA, root / "schemas" / "translate.yaml")
    exported = codegen_venv.run("stageware", "schema", "export", "schemas/base", cwd=root)
    assert exported.returncode == 0, exported.stderr
    for schema, package in [("translate.yaml", "translate_api"), ("base/stages.yaml", "my_stages")]:
        generated = codegen_venv.run(
            "stageware",
            "generate",
            "--schema",
            f"schemas/{schema}",
            "--output",
            f"app/{package}",
            cwd=root,
        )
        assert generated.returncode == 0, generated.stderr
    (root / "app" / "harness.py").write_text(USER_CODE, encoding="utf-8")
    return root


def _check(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_generated_packages_pass_both_strict_checkers_against_the_installed_wheel(
    codegen_venv: Venv, tmp_path: Path
) -> None:
    project = _user_project(codegen_venv, tmp_path / "project")
    (project / "pyrightconfig.json").write_text(
        json.dumps({"include": ["app"], "typeCheckingMode": "strict", "pythonVersion": "3.11"}),
        encoding="utf-8",
    )
    where = codegen_venv.run(
        "python", "-c", "import stageware; print(stageware.__file__)", cwd=project
    )
    assert where.stdout.startswith(str(codegen_venv.root)), "test bug: stageware is not the wheel's"

    pyright = _check(
        [sys.executable, "-m", "pyright", "--pythonpath", str(codegen_venv.python)], project
    )
    mypy = _check(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-executable",
            str(codegen_venv.python),
            "--no-incremental",
            "app",
        ],
        project,
    )

    assert pyright.returncode == 0, pyright.stdout + pyright.stderr
    assert "0 errors" in pyright.stdout
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr
    checked = len(list((project / "app").rglob("*.py")))
    assert f"no issues found in {checked} source files" in mypy.stdout, mypy.stdout
