"""Views of the small modules: results, stage tokens and ``__init__``."""

from __future__ import annotations

from typing import Any

from stageware_codegen.resolve import ir as _ir
from stageware_codegen.resolve.stage_names import ALIAS_GENERICS, StageNames

from .docstrings import docstring
from .imports import Imports
from .viewkit import MEMBER, ModuleView

__all__ = ["init_view", "results_view", "stages_view"]

_PHASES = ("Input", "Wrap", "Output")


def results_view(schema: _ir.Schema) -> dict[str, Any]:
    """The view of ``results.py``: one ``MiddlewareResult`` subclass per stage."""
    # No @dataclass here: the runtime base is already a frozen dataclass whose __init__
    # accepts `result` or the earlier `value`; re-decorating would replace that __init__.
    module = ModuleView(schema, ".results")
    module.imports.add("typing", "final")
    module.runtime("MiddlewareResult")
    results: list[dict[str, str]] = []
    for stage in schema.stages:
        names = StageNames(stage.name)
        module.imports.add(".events", stage.result)
        doc = "\n".join(
            [
                f"Result passed to and returned from `{names.token}.Output` handlers.",
                "",
                f"Build it as `{names.result}(event)`; use `result.replace(result=...)` to",
                f"hand back a different `{stage.result}`.",
                "",
                "Attributes:",
                f"    result: The `{stage.result}` event that ends the stage.",
            ]
        )
        results.append(
            {
                "name": names.result,
                "base": f"MiddlewareResult[{stage.result}]",
                "docstring": docstring(doc, MEMBER),
            }
        )
    return {
        "doc": "Stage results: the wrappers Output handlers receive and return.",
        "imports": module.imports.lines(),
        "results": results,
    }


def stages_view(schema: _ir.Schema) -> dict[str, Any]:
    """The view of ``stages.py``: stage tokens and handler type aliases."""
    module = ModuleView(schema, ".stages")
    module.imports.add("typing", "Final")
    module.imports.add("typing", "TypeAlias")
    module.runtime("MiddlewareStage", *ALIAS_GENERICS)
    stages: list[dict[str, Any]] = []
    for stage in schema.stages:
        names = StageNames(stage.name)
        module.imports.add(".contexts", names.context)
        module.imports.add(".results", names.result)
        module.imports.add(".events", names.event)
        module.imports.add(".events", stage.result)
        stages.append(
            {
                "token": names.token,
                "type": f"MiddlewareStage[{names.context}, {names.result}, {names.event}]",
                "name": repr(stage.name),
                "result_type": names.result,
                "result_event": stage.result,
                "docstring": docstring(stage.doc),
                "aliases": [(alias.name, alias.target, alias.doc) for alias in names.aliases()],
            }
        )
    return {
        "doc": "Stage tokens and the handler type aliases that make handlers short to annotate.",
        "imports": module.imports.lines(),
        "stages": stages,
    }


def init_view(schema: _ir.Schema, payload_names: list[str]) -> dict[str, Any]:
    """The view of ``__init__.py``: explicit re-exports of every public generated name."""
    groups: dict[str, list[str]] = {
        ".payloads": list(payload_names),
        ".events": [event.name for event in schema.events],
    }
    for stage in schema.stages:
        for module_name, stage_names in StageNames(stage.name).by_module().items():
            groups.setdefault(module_name, []).extend(stage_names)
    imports = Imports()
    exported: list[str] = []
    for module_name, names in groups.items():
        for name in names:
            imports.add(module_name, name)
        exported.extend(names)
    # The policy surface (hook points, bands, hook events) stays in ``policy_points``:
    # hook events share names with stage events and payload types, and the policy layer
    # has a namespace of its own (``stageware.policy``).
    return {
        "doc": "The generated stage surface, re-exported in one place.",
        "imports": imports.lines(),
        "exported": [repr(name) for name in sorted(exported)],
    }
