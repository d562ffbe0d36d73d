"""Every public module of stageware lists its names in a literal ``__all__``.

Type checkers read ``__all__`` from the source without running it. pyright accepts only a
few forms, and for a library it calls a name missing from them a private import
(``reportPrivateImportUsage``) in every user's code, a generated package's included. A
literal list of strings is the one form every checker reads alike, so each public
module (a module with no ``_``-prefixed part in its dotted name) has exactly one, never
changed afterwards, naming exactly the public names the module binds.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import stageware
import stageware._runtime

PACKAGE = Path(stageware.__file__).parent


def _public_modules() -> list[str]:
    found = ["stageware"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="stageware."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


PUBLIC = _public_modules()


def _source(module: str) -> ast.Module:
    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"), spec.origin)


def _guarded(node: ast.stmt) -> list[ast.stmt] | None:
    """The statements under ``if TYPE_CHECKING:``, or under a ``try:`` (an import with an
    install hint for its failure); None for any other statement."""
    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
        return node.body
    if isinstance(node, ast.Try):
        return node.body
    return None


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, those under ``if TYPE_CHECKING:`` and ``try:`` included."""
    statements: list[ast.stmt] = []
    for node in tree.body:
        guarded = _guarded(node)
        statements.extend([node] if guarded is None else guarded)
    return statements


def _literal_all(tree: ast.Module) -> list[str]:
    """The strings of the module's one ``__all__ = [...]``; fails on any other form."""
    assigned: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            assigned.append(node.value)
        elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "__all__":
            assert node.value is not None, "__all__ is annotated but not assigned"
            assigned.append(node.value)
        elif isinstance(node, ast.AugAssign) and ast.unparse(node.target) == "__all__":
            pytest.fail(f"line {node.lineno}: __all__ is extended with +=, not written out")
        elif isinstance(node, ast.Attribute) and ast.unparse(node.value) == "__all__":
            pytest.fail(f"line {node.lineno}: __all__.{node.attr} changes it after the fact")
    assert len(assigned) == 1, f"__all__ is assigned {len(assigned)} times"
    (value,) = assigned
    assert isinstance(value, ast.List), f"line {value.lineno}: __all__ is not a list literal"
    names: list[str] = []
    for element in value.elts:
        literal = element.value if isinstance(element, ast.Constant) else None
        assert isinstance(literal, str), (
            f"line {element.lineno}: {ast.unparse(element)} is not a string literal"
        )
        names.append(literal)
    return names


def _bound_names(tree: ast.Module) -> set[str]:
    """The names the module binds at its top level (``from __future__`` aside)."""
    bound: set[str] = set()
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            bound.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            bound.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Assign):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound.add(node.target.id)
    return bound - {"__all__"}


def test_the_public_modules_are_found() -> None:
    # The walk itself could find nothing and pass every test below; these must be there.
    assert {
        "stageware",
        "stageware.middleware",
        "stageware.policy",
        "stageware.postgres",
        "stageware.runtime",
    } <= set(PUBLIC)


@pytest.mark.parametrize("module", PUBLIC)
def test_all_is_a_literal_list_of_exactly_the_public_names_bound(module: str) -> None:
    tree = _source(module)
    listed = _literal_all(tree)
    bound = _bound_names(tree)

    assert len(listed) == len(set(listed)), "a name is listed twice"
    public_bound = {name for name in bound if not name.startswith("_")}
    assert public_bound == {name for name in listed if not name.startswith("_")}
    assert {name for name in listed if name.startswith("_")} <= bound


@pytest.mark.parametrize("module", PUBLIC)
def test_all_at_run_time_is_the_literal_and_every_name_resolves(module: str) -> None:
    loaded = importlib.import_module(module)

    assert loaded.__all__ == _literal_all(_source(module))
    missing = [name for name in loaded.__all__ if not hasattr(loaded, name)]
    assert missing == []


def test_the_public_runtime_lists_every_name_of_the_runtime() -> None:
    # stageware.runtime is the contract generated packages import from: a name the runtime
    # adds to its own list must be written out there too.
    import stageware.runtime

    assert stageware.runtime.__all__ == stageware._runtime.__all__
