"""Import blocks for generated modules, computed from the names a module uses."""

from __future__ import annotations

import sys
from collections import defaultdict

from stageware_codegen.load.reserved import MODULE_ALIASES, TEMPLATE_IMPORTS

__all__ = ["Imports"]


class Imports:
    """Collects ``from module import name`` pairs and renders them grouped and sorted.

    Groups follow the usual order (future, standard library, third party, relative) so
    the output reads like hand-written code; ruff only formats, it does not sort.
    """

    def __init__(self) -> None:
        self._names: defaultdict[str, set[str]] = defaultdict(set)
        self._type_only: defaultdict[str, set[str]] = defaultdict(set)
        self._modules: set[str] = set()

    def add(self, module: str, name: str) -> None:
        """Import *name* from *module*.

        Raises:
            ValueError: *name* comes from outside the package (not a relative *module*)
                but is not in :data:`~stageware_codegen.load.reserved.TEMPLATE_IMPORTS`,
                so a schema could declare a type of that name; list it there.
        """
        if not module.startswith(".") and name not in TEMPLATE_IMPORTS.get(module, ()):
            raise ValueError(f"{module}:{name} is not a reserved name (load/reserved.py)")
        self._names[module].add(name)

    def add_type_only(self, module: str, name: str, alias: str | None = None) -> None:
        """Import *name* from *module* for the type checkers only (under ``TYPE_CHECKING``).

        External types are annotations in generated code, never needed at run time, so
        importing them lazily lets their module import the generated package in turn.
        """
        self._type_only[module].add(name if alias in (None, name) else f"{name} as {alias}")
        self.add("typing", "TYPE_CHECKING")

    def add_module(self, module: str) -> str:
        """``import module as alias``, with the alias :mod:`.reserved` gives it; return it."""
        alias = MODULE_ALIASES[module]
        self._modules.add(f"import {module} as {alias}")
        return alias

    def lines(self) -> list[str]:
        """The import statements, one group after another, groups separated by ''."""
        groups: list[list[str]] = [["from __future__ import annotations"], [], [], [], []]
        for statement in sorted(self._modules):
            groups[1].append(statement)
        for module in sorted(self._names):
            groups[self._group(module)].append(f"from {module} import {self._joined(module)}")
        lines: list[str] = []
        for group in groups:
            if group:
                if lines:
                    lines.append("")
                # Plain `import` statements first, as isort orders them.
                lines.extend(sorted(group, key=lambda line: (line.startswith("from "), line)))
        if self._type_only:
            lines.extend(["", "if TYPE_CHECKING:"])
            for module in sorted(self._type_only):
                names = ", ".join(sorted(self._type_only[module], key=lambda n: (n.lower(), n)))
                lines.append(f"    from {module} import {names}")
        return lines

    def _joined(self, module: str) -> str:
        return ", ".join(sorted(self._names[module], key=lambda n: (n.lower(), n)))

    @staticmethod
    def _group(module: str) -> int:
        if module.startswith("."):
            return 4
        top = module.split(".")[0]
        if top in sys.stdlib_module_names:
            return 1
        if top == "stageware":
            return 3
        return 2
