"""The stageware code generator: turns a stage schema into the typed middleware surface.

:func:`generate` writes the generated package, :func:`check` reports whether the
checked-in one is up to date. Both raise :class:`InvalidSchemaError` for a bad schema
and write nothing in that case. :func:`find_config` reads ``[tool.stageware]``, as the
command line does. These names, and :mod:`.cli`, are the package's public surface; the
sub-packages are its implementation, one per step of the pipeline, each importing only
the steps before it:

- ``load/``: read the YAML and the payload files, check the shape of every value.
- ``resolve/``: check what needs the whole schema; build the IR the renderers read.
- ``render/``: views, the jinja2 templates beside them, datamodel-code-generator.
- ``write/``: ruff formatting, the import check, atomic writes, the ``check`` diff.

``_pipeline`` runs the steps in order; ``_errors`` (the exceptions), ``_project``
(``[tool.stageware]``, paths as shown) and ``_checker`` (a subprocess started early,
asked later) are shared by all of them; ``_shipped_schema``
finds the stage schema the wheel ships.

The generator needs the ``codegen`` extra (``pip install -e '.[codegen]'`` in a clone) and the
runtime never imports it. Names here load on first use, so importing this package, or
the command line inside it, loads none of the extra's packages: ``stageware demo`` runs
without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._errors import InvalidSchemaError, OutputError, SchemaError
    from ._pipeline import CheckReport, check, generate
    from ._project import ConfigError, ProjectConfig, find_config, relative_path
    from .write.files import WriteReport

__all__ = [
    "CheckReport",
    "ConfigError",
    "InvalidSchemaError",
    "OutputError",
    "ProjectConfig",
    "SchemaError",
    "WriteReport",
    "check",
    "find_config",
    "generate",
    "relative_path",
]

# The module each public name lives in. Only `_pipeline` brings in the generator's
# dependencies; the others import the standard library alone.
_HOMES = {
    "CheckReport": "._pipeline",
    "ConfigError": "._project",
    "InvalidSchemaError": "._errors",
    "OutputError": "._errors",
    "ProjectConfig": "._project",
    "SchemaError": "._errors",
    "WriteReport": ".write.files",
    "check": "._pipeline",
    "find_config": "._project",
    "generate": "._pipeline",
    "relative_path": "._project",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
