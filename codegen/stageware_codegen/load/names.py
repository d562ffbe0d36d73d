"""Rules for the names a schema may declare, and the names generated code reserves.

Names reach generated code verbatim (as class, field and enum-member names), so each kind
is checked against a pattern, Python keywords, and the names the generated modules use
themselves: a field called ``dict`` would shadow the builtin inside ``from_host()``, a
field called ``str`` would turn every later ``str`` annotation in its class into a
reference to the field. The module-level names generated code binds are listed in
:mod:`.reserved`.
"""

from __future__ import annotations

import builtins
import keyword
import re
from typing import Final

from .reserved import DATAMODEL_IMPORTS, RESERVED, TEMPLATE_IMPORTS

__all__ = [
    "BUILTIN_TYPE_NAMES",
    "CONTEXT_MEMBERS",
    "EVENT_MEMBERS",
    "RESERVED_FIELD_NAMES",
    "check_field_name",
    "check_hook_point_name",
    "check_lower_name",
    "check_model_name",
    "check_python_path",
    "check_type_name",
    "enum_member",
    "reserved_type_problem",
]

# Names a type expression may use without declaring them, with the module they come from
# (None for builtins).
BUILTIN_TYPE_NAMES: Final[dict[str, str | None]] = {
    "str": None,
    "int": None,
    "float": None,
    "bool": None,
    "bytes": None,
    "object": None,
    "Exception": None,
    "BaseException": None,
    "list": None,
    "dict": None,
    "tuple": None,
    "Any": "typing",
    "Literal": "typing",
    "Mapping": "collections.abc",
    "Sequence": "collections.abc",
}

# Lower-case names used inside generated class bodies and methods, where a field or
# parameter of the same name would shadow them.
RESERVED_FIELD_NAMES: Final = frozenset(
    {
        "bool",
        "bytes",
        "classmethod",
        "cls",
        "dict",
        "field",
        "float",
        "int",
        "isinstance",
        "list",
        "object",
        "overload",
        "self",
        "str",
        "tuple",
    }
)

CONTEXT_MEMBERS: Final = frozenset({"from_host", "interrupt", "interrupts", "name_uuid", "replace"})
"""Context methods and parameters a context field may not be named after."""

EVENT_MEMBERS: Final = frozenset({"get", "is_interrupt", "keys"})
"""Event class attributes and methods an event field may not be named after."""

_TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*")
_LOWER_NAME = re.compile(r"[a-z][a-z0-9_]*")
_HOOK_POINT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
_PYTHON_PATH = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"
)


def check_type_name(name: str) -> str:
    """Validate a stage, event, payload or external type name (PascalCase)."""
    if not _TYPE_NAME.fullmatch(name):
        raise ValueError(f"invalid name {name!r}: expected a PascalCase identifier")
    if keyword.iskeyword(name):
        raise ValueError(f"{name!r} is a Python keyword")
    if hasattr(builtins, name):
        raise ValueError(f"{name!r} would shadow the Python builtin of that name")
    return name


def check_model_name(name: str) -> str:
    """Validate the name of a payload type: PascalCase, no underscores.

    datamodel-code-generator writes these classes, and it renames a name with an
    underscore (``Tool_Call`` becomes ``ToolCall``), which the rest of the generated
    code would not find.
    """
    check_type_name(name)
    if "_" in name:
        raise ValueError(
            f"invalid name {name!r}: payload types may not contain '_' "
            "(datamodel-code-generator, which writes them, would rename it)"
        )
    return name


def reserved_type_problem(
    name: str, same_as: str | None = None, shown: str | None = None
) -> str | None:
    """Why *name* cannot name a schema type, or None.

    Args:
        name: A PascalCase name the schema defines, or that is generated from one.
        same_as: The ``module:Attr`` an external type imports; a reserved name is fine
            when it is exactly what the generated code imports under that name.
        shown: How to name *name* in the message (default: the name, quoted).
    """
    shown = repr(name) if shown is None else shown
    origin = RESERVED.get(name)
    if origin is not None and not _imports_exactly(name, same_as):
        return f"{shown} is reserved: the generated code {origin}"
    if name in BUILTIN_TYPE_NAMES:
        return f"{shown} is a built-in type name"
    return None


def _imports_exactly(name: str, same_as: str | None) -> bool:
    if same_as is None:
        return False
    module, _, attr = same_as.partition(":")
    return attr == name and any(
        name in imports.get(module, ()) for imports in (TEMPLATE_IMPORTS, DATAMODEL_IMPORTS)
    )


def check_field_name(name: str) -> str:
    """Validate a context, event or hook payload field name (lower_snake_case)."""
    if not _LOWER_NAME.fullmatch(name):
        raise ValueError(f"invalid field name {name!r}: expected a lower_snake_case identifier")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ValueError(f"{name!r} is a Python keyword")
    if name in RESERVED_FIELD_NAMES:
        raise ValueError(f"{name!r} is reserved: generated code uses that name")
    return name


def check_lower_name(name: str) -> str:
    """Validate a band, direction or event-key name (lower_snake_case)."""
    if not _LOWER_NAME.fullmatch(name):
        raise ValueError(f"invalid name {name!r}: expected a lower_snake_case identifier")
    return name


def check_hook_point_name(name: str) -> str:
    """Validate a dotted hook point name such as ``tool.before``."""
    if not _HOOK_POINT.fullmatch(name):
        raise ValueError(
            f"invalid hook point {name!r}: "
            "expected dotted lower_snake_case parts like 'tool.before'"
        )
    return name


def check_python_path(path: str) -> str:
    """Validate ``package.module:Name``, the import location of an external type."""
    if not _PYTHON_PATH.fullmatch(path):
        raise ValueError(f"invalid import path {path!r}: expected 'package.module:Name'")
    module, _, name = path.partition(":")
    for part in (*module.split("."), name):
        if keyword.iskeyword(part):
            raise ValueError(f"invalid import path {path!r}: {part!r} is a Python keyword")
    return path


def enum_member(name: str) -> str:
    """The enum member generated for a hook point, band or direction (``tool.before``)."""
    return name.replace(".", "_").upper()
