"""The direction of imports: runtime <- generated <- host <- policy, kept true by these tests.

Ready-made middleware (``stageware.middleware``) sit above the host and import only public
modules (the policy layer's ``stageware.policy`` among them), as a user's middleware does.

The runtime knows nothing the generator emits; a generated package imports only public
stageware modules, because a user's generated package depends on them as a contract;
and ``import stageware`` loads the parts of the package lazily, on first use.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import stageware

PACKAGE = Path(stageware.__file__).parent
PUBLIC_MODULES = {"stageware", "stageware.runtime"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module *path* imports, absolute, with its line (relative imports resolved)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def _stageware_imports(directory: Path) -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(PACKAGE)), line, module)
        for path in sorted(directory.rglob("*.py"))
        for line, module in _imports(path)
        if module == "stageware" or module.startswith("stageware.")
    ]


def _loaded_after(module: str) -> list[str]:
    """The stageware modules a fresh interpreter has loaded after importing *module*."""
    code = f"import sys, {module}\nprint(*sorted(m for m in sys.modules if 'stageware' in m))"
    completed = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    return completed.stdout.split()


def test_the_runtime_imports_nothing_generated_or_above() -> None:
    above = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / "_runtime")
        if not module.startswith("stageware._runtime")
    ]
    assert above == []


def test_importing_the_runtime_loads_no_generated_module() -> None:
    loaded = _loaded_after("stageware._runtime")
    assert "stageware._runtime" in loaded
    assert not any(
        module.startswith(("stageware._generated", "stageware._host")) for module in loaded
    )


def test_generated_modules_import_only_public_stageware_modules() -> None:
    private = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / "_generated")
        if not module.startswith("stageware._generated") and module not in PUBLIC_MODULES
    ]
    assert private == []


def test_the_generated_package_imports_nothing_from_the_host() -> None:
    loaded = _loaded_after("stageware._generated")
    assert "stageware._generated.contexts" in loaded
    assert not any(module.startswith("stageware._host") for module in loaded)


@pytest.mark.parametrize("layer", ["_generated", "_runtime"])
def test_lower_layers_never_import_the_host_or_the_policy_layer(layer: str) -> None:
    upward = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / layer)
        if module.startswith(("stageware._host", "stageware._demo", "stageware.policy"))
    ]
    assert upward == []


def test_the_type_checking_imports_of_the_package_match_its_all() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    imported = {"__version__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "_typing.TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                imported.update(alias.name for alias in statement.names)
    assert imported == set(stageware.__all__)


def test_the_host_never_imports_the_policy_layer() -> None:
    upward = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / "_host")
        if module.startswith(("stageware._policy", "stageware.policy", "stageware._demo"))
    ]
    assert upward == []


def test_ready_made_middleware_imports_only_public_stageware_modules() -> None:
    # stageware.middleware is written with the surface users have, above the host.
    private = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / "_middleware")
        if not module.startswith("stageware._middleware")
        and module not in {*PUBLIC_MODULES, "stageware.policy"}
    ]
    assert private == []


@pytest.mark.parametrize("layer", ["_runtime", "_generated", "_host"])
def test_no_lower_layer_imports_the_ready_made_middleware(layer: str) -> None:
    upward = [
        (path, line, module)
        for path, line, module in _stageware_imports(PACKAGE / layer)
        if module.startswith(("stageware._middleware", "stageware.middleware"))
    ]
    assert upward == []


@pytest.mark.parametrize("layer", ["_runtime", "_generated", "_host", "_policy", "_middleware"])
def test_only_the_dbos_integration_imports_dbos(layer: str) -> None:
    # The dbos extra's engine stays behind stageware.dbos: every layer below imports
    # without it (the command line's wake-up imports stageware._dbos lazily, when asked).
    found = [
        (str(path.relative_to(PACKAGE)), line, module)
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for line, module in _imports(path)
        if module.partition(".")[0] == "dbos"
        or module.startswith(("stageware._dbos", "stageware.dbos"))
    ]
    assert found == []
