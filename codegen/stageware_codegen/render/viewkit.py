"""Shared helpers for the view models: imports per module and field defaults.

The ``view_*`` modules compute everything the templates print; templates only loop and
print. This module holds what several views need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stageware_codegen.load.reserved import RUNTIME_MODULE
from stageware_codegen.resolve import ir as _ir
from stageware_codegen.resolve.type_exprs import NameKind, TypeExpr

from .imports import Imports

__all__ = ["BODY", "MEMBER", "ModuleView", "default_code", "quoted_names"]

MEMBER = "    "
"""Indentation of class members."""
BODY = "        "
"""Indentation of method bodies."""


@dataclass
class ModuleView:
    """One generated module's imports, filled in as its view uses names.

    Attributes:
        schema: The resolved schema.
        home: The module being generated (``.events``); its own names are not imported.
    """

    schema: _ir.Schema
    home: str
    imports: Imports = field(default_factory=Imports)
    _defined: set[str] = field(default_factory=set[str])

    def unique_name(self, name: str) -> str:
        """*name*, numbered if the module already defines it (``_A_b_c`` twice)."""
        unique, number = name, 1
        while unique in self._defined:
            number += 1
            unique = f"{name}_{number}"
        self._defined.add(unique)
        return unique

    def use_type(self, expr: TypeExpr) -> str:
        """Import every name in *expr* and return its text."""
        externals = {item.name: item for item in self.schema.externals}
        for name in sorted(expr.names):
            kind = self.schema.kinds.get(name)
            if kind is NameKind.PAYLOAD:
                self._local(".payloads", name)
            elif kind is NameKind.EVENT:
                self._local(".events", name)
            elif kind is NameKind.EXTERNAL:
                item = externals[name]
                self.imports.add_type_only(item.module, item.attr, alias=name)
            elif name in ("Any", "Literal"):
                self.imports.add("typing", name)
            elif name in ("Mapping", "Sequence"):
                self.imports.add("collections.abc", name)
        return expr.text

    def _local(self, module: str, name: str) -> None:
        # A module never imports from itself; annotations are lazy, so order is free.
        if module != self.home:
            self.imports.add(module, name)

    def runtime(self, *names: str) -> None:
        """Import *names* from the stageware runtime."""
        for name in names:
            self.imports.add(RUNTIME_MODULE, name)


def default_code(
    owner: str, name: str, expr: TypeExpr, value: Any, module: ModuleView
) -> tuple[str, dict[str, str] | None]:
    """The dataclass default for a field, and a factory function if one is needed.

    The value decides, not the type: a list or a mapping is mutable whatever the type
    calls it (a payload alias such as ``Messages``, ``Any``), so it becomes a typed
    factory function. Each instance gets its own value, and the checkers see the literal
    against the field's declared type.
    """
    literal = repr(value)
    if not isinstance(value, list | dict):
        return literal, None
    module.imports.add("dataclasses", "field")
    factory = module.unique_name(f"_{owner}_{name}_default")
    return f"field(default_factory={factory})", {
        "name": factory,
        "type": expr.text,
        "value": literal,
    }


def quoted_names(items: list[str]) -> str:
    """Names in backticks joined as prose: `a`, `b` and `c`."""
    quoted = [f"`{item}`" for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
