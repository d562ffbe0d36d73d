"""External types (``types:``) checked where they are declared: the module has the name.

Generated code imports external types for the type checkers only (under
``TYPE_CHECKING``), so importing the generated package no longer proves them: a missing
module or a misspelled name would show up as a checker's error inside generated code. So
every entry is checked here, and a problem is reported at its ``python`` key.

The check must not import the package being regenerated. The built-in schema names
``stageware:Model``; getting that attribute imports the host, which imports
``stageware._generated``, possibly the broken package a run is about to replace. So a
module is found without being run (``importlib.util.find_spec``; a dotted name imports
its parent packages) and the name is looked for in its source: a definition, an import
(also one under ``if TYPE_CHECKING:``) or an ``__all__`` entry. Only a module whose
source cannot answer (no source, a star import, a module ``__getattr__`` that does not
list the name in ``__all__``) is imported, and the attribute read.

The lookups run in a subprocess (``python -m`` this module, a :class:`TypesChecker`
the pipeline starts before it loads the schema; it reads the entries from stdin) with
the working directory on the path, as the import check of the generated package does:
importing parent packages cannot disturb the generator's own imports, and a module of
the project in the working directory is found.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from stageware_codegen._checker import Checker
from stageware_codegen._errors import OutputError
from stageware_codegen.load.diagnostics import did_you_mean

__all__ = ["TypesChecker", "check_external_types", "external_type_problem"]

_MARKER = "stageware-external-types"
_FAILURE = "cannot check the external types"


class TypesChecker(Checker):
    """The checking subprocess, started now; it waits for the entries to check.

    Use it as a context manager: one that was not asked is killed when the block ends.
    """

    def __init__(self) -> None:
        super().__init__(["-m", __name__], _MARKER, _FAILURE)

    def check(self, paths: Sequence[str]) -> dict[str, str]:
        """Check every ``package.module:Name`` in *paths*; the problem of each bad one.

        Raises:
            OutputError: The checking subprocess could not run.
        """
        answer = self.ask(json.dumps(list(paths)))
        # A module imported along the way may print; the answer is the last marked line.
        if answer.reports:
            problems: dict[str, str] = json.loads(answer.reports[-1])
            return problems
        raise OutputError(f"{_FAILURE}: {answer.error}")


def check_external_types(
    paths: Sequence[str], checker: TypesChecker | None = None
) -> dict[str, str]:
    """Check every ``package.module:Name`` in *paths*; return the problem of each bad one.

    The check runs in *checker*, started earlier, else in a fresh subprocess.

    Raises:
        OutputError: The checking subprocess could not run.
    """
    if not paths:
        return {}
    if checker is not None:
        return checker.check(paths)
    with TypesChecker() as fresh:
        return fresh.check(paths)


def external_type_problem(path: str) -> str | None:
    """Why ``module:Name`` *path* cannot be imported, or None if it can.

    Runs in the checking subprocess; it may import parent packages and, as a last
    resort, the module itself (see the module docstring).
    """
    module, _, name = path.partition(":")
    prefix = f"{path!r} cannot be imported: "
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError as exc:
        return prefix + f"no module named {exc.name or module!r}"
    except BaseException as exc:  # a parent package that fails to import, however it fails
        return prefix + f"importing {module!r} raised {_one_line(exc)}"
    if spec is None:
        return prefix + f"no module named {module!r}"
    names = _names_in_source(spec, module)
    if names is not None:
        if name in names.bound or name in names.exported:
            return None
        if not names.dynamic:
            candidates = {item for item in names.bound if not item.startswith("_")}
            return prefix + _no_attribute(module, name, candidates | names.exported)
    try:
        loaded = importlib.import_module(module)
    except BaseException as exc:  # the module's own code, however it fails
        return prefix + f"importing {module!r} raised {_one_line(exc)}"
    if hasattr(loaded, name):
        return None
    return prefix + _no_attribute(module, name, dir(loaded))


@dataclass
class _SourceNames:
    """The names a module's source binds at module level, in any branch.

    Attributes:
        bound: Defined, assigned or imported names.
        exported: The literal entries of ``__all__``.
        dynamic: The module may have names its source does not show (a star import, a
            module-level ``__getattr__``).
    """

    bound: set[str] = field(default_factory=set[str])
    exported: set[str] = field(default_factory=set[str])
    dynamic: bool = False


def _names_in_source(spec: importlib.machinery.ModuleSpec, module: str) -> _SourceNames | None:
    """The names in the source of the module *spec* finds, or None without source."""
    loader = spec.loader
    if not isinstance(loader, importlib.abc.InspectLoader):
        return None
    try:
        source = loader.get_source(module)
        if source is None:
            return None
        tree = ast.parse(source)
    except (ImportError, SyntaxError, ValueError):
        return None
    names = _SourceNames()
    for node in _module_statements(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.bound.add(node.name)
            names.dynamic |= node.name == "__getattr__" and not isinstance(node, ast.ClassDef)
        elif isinstance(node, ast.Import):
            names.bound.update(alias.asname or alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    names.dynamic = True
                else:
                    names.bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.bound.update(
                    item.id for item in ast.walk(target) if isinstance(item, ast.Name)
                )
                if isinstance(target, ast.Name) and target.id == "__all__":
                    names.exported.update(_strings(node.value))
    return names


def _module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Statements that run at module level: also inside ``if``, ``try``, ``with`` blocks."""
    pending: list[ast.stmt] = list(reversed(tree.body))
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                pending.append(child)
            elif isinstance(child, ast.ExceptHandler | ast.match_case):
                pending.extend(child.body)


def _strings(node: ast.expr | None) -> set[str]:
    """The string constants of a literal list or tuple (an ``__all__``)."""
    if not isinstance(node, ast.List | ast.Tuple):
        return set()
    return {
        item.value
        for item in node.elts
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
    }


def _no_attribute(module: str, name: str, candidates: set[str] | list[str]) -> str:
    return f"module {module!r} has no attribute {name!r}" + did_you_mean(name, sorted(candidates))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _main() -> None:
    """Check the entries of the JSON list on stdin's first line (none: exit)."""
    request = sys.stdin.readline()
    if not request.strip():
        return
    paths: list[str] = json.loads(request)
    problems = {path: problem for path in paths if (problem := external_type_problem(path))}
    print(_MARKER, json.dumps(problems), sep="\t")


if __name__ == "__main__":
    _main()
