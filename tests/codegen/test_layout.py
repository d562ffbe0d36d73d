"""The generator's layout: one sub-package per pipeline step, imports in one direction.

load -> resolve -> render -> write: a step imports only the steps before it (write works
on texts and imports none of them), and every step may use the package's shared
``_errors``, ``_project`` and ``_checker``. The package loads its public names on first
use, so that the command line inside it runs without the ``codegen`` extra.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import stageware_codegen

PACKAGE = Path(stageware_codegen.__file__).parent
STEPS = ("load", "resolve", "render", "write")
SHARED = {"stageware_codegen._checker", "stageware_codegen._errors", "stageware_codegen._project"}
CODEGEN_EXTRA = ("jinja2", "yaml", "datamodel_code_generator", "ruff")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _codegen_imports(path: Path) -> list[tuple[int, str]]:
    """Every stageware_codegen module *path* imports, with its line, relative ones resolved.

    ``from package import name`` counts as importing the module ``package.name`` when
    there is one.
    """
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{node.module}" if node.module else parent
            modules = [
                f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base
                for alias in node.names
            ]
        else:
            continue
        found.extend((node.lineno, module) for module in modules)
    return [(line, module) for line, module in found if module.startswith("stageware_codegen")]


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_each_step_imports_only_the_steps_before_it() -> None:
    wrong: list[tuple[str, int, str]] = []
    for rank, step in enumerate(STEPS):
        allowed = {step} if step == "write" else set(STEPS[: rank + 1])
        for path in sorted((PACKAGE / step).rglob("*.py")):
            for line, module in _codegen_imports(path):
                parts = module.split(".")
                if module in SHARED or (len(parts) > 1 and parts[1] in allowed):
                    continue
                wrong.append((str(path.relative_to(PACKAGE)), line, module))
    assert wrong == []


def test_every_step_says_its_job_and_what_it_may_import() -> None:
    for step in STEPS:
        doc = ast.get_docstring(ast.parse((PACKAGE / step / "__init__.py").read_text()))
        assert doc is not None, step
        assert doc.startswith(f"Step {STEPS.index(step) + 1}, "), step
        assert "May import:" in doc, step
        listed = {
            path.stem
            for path in (PACKAGE / step).glob("*.py")
            if path.stem != "__init__" and f"``{path.stem}``" not in doc
        }
        assert listed == set(), f"{step}/__init__.py does not name {sorted(listed)}"


def test_every_module_opens_with_its_role() -> None:
    missing = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert missing == []


def test_the_type_checking_imports_of_the_package_match_its_all() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                imported.update(alias.name for alias in statement.names)
    assert imported == set(stageware_codegen.__all__)
    assert all(getattr(stageware_codegen, name) is not None for name in stageware_codegen.__all__)


def test_the_package_and_its_command_line_load_nothing_of_the_codegen_extra() -> None:
    code = (
        "import sys, stageware_codegen, stageware_codegen.cli\n"
        "from stageware_codegen import ConfigError, InvalidSchemaError, OutputError, find_config\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {CODEGEN_EXTRA})\n"
        "assert not loaded, loaded\n"
        "assert 'stageware._generated' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
