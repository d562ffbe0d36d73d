"""The names a schema defines, checked for clashes across the generated package.

Payload types, external types, events and the names generated for each stage share one
namespace: ``__init__`` re-exports them side by side, and the modules import them from
each other. Hook events live in a module of their own and only need to avoid the payload
types and stage tokens the policy modules see.
"""

from __future__ import annotations

from stageware_codegen.load.diagnostics import DocPath, ErrorCollector
from stageware_codegen.load.names import BUILTIN_TYPE_NAMES, reserved_type_problem
from stageware_codegen.load.payloads import PayloadSet
from stageware_codegen.load.spec import SchemaSpec

from .stage_names import StageNames
from .type_exprs import NameKind

__all__ = ["claim_names"]


def claim_names(
    spec: SchemaSpec, payloads: PayloadSet, errors: ErrorCollector
) -> dict[str, NameKind]:
    """Every name type expressions may use, checking that generated names never clash."""
    owners: dict[str, str] = {}

    def claim(
        name: str, label: str, path: DocPath, same_as: str | None = None, shown: str | None = None
    ) -> None:
        """Reserve *name*, described as *label* in messages, for one definition.

        *shown* names *name* if it is reserved: how it came from the schema.
        """
        problem = reserved_type_problem(name, same_as, shown)
        if problem is not None:
            errors.add(path, problem)
        elif name in owners:
            errors.add(path, f"{label} clashes with {owners[name]}")
        else:
            owners[name] = label

    kinds: dict[str, NameKind] = dict.fromkeys(BUILTIN_TYPE_NAMES, NameKind.BUILTIN)
    # Payload names were checked where they are defined, in their JSON files; a later
    # definition that clashes with one is reported at its own place in the YAML.
    for name in payloads.defs:
        owners[name] = f"payload type {name!r}"
        kinds[name] = NameKind.PAYLOAD
    for name, external in spec.types.items():
        claim(name, f"external type {name!r}", ("types", name), same_as=external.python)
        kinds[name] = NameKind.EXTERNAL
    for name in spec.events:
        claim(name, f"event {name!r}", ("events", name))
        kinds[name] = NameKind.EVENT
    for name in spec.stages:
        for generated in StageNames(name).all():
            label = f"{generated!r} (generated for stage {name!r})"
            claim(generated, label, ("stages", name), shown=label)
    if spec.hooks is not None:
        _claim_hook_events(spec, payloads, errors)
    return kinds


def _claim_hook_events(spec: SchemaSpec, payloads: PayloadSet, errors: ErrorCollector) -> None:
    assert spec.hooks is not None
    # Hook events live in their own module, which imports the payload types, beside
    # policy_points, which imports the stage tokens: they may reuse a stage event's name
    # but no payload or stage-token name.
    owners = {name: f"payload type {name!r}" for name in payloads.defs}
    for stage in spec.stages:
        token = StageNames(stage).token
        owners[token] = f"stage token {token!r}"
    for point, item in spec.hooks.points.items():
        path: DocPath = ("hooks", "points", point, "event")
        problem = reserved_type_problem(item.event)
        if problem is not None:
            errors.add(path, problem)
        elif item.event in owners:
            errors.add(path, f"hook event {item.event!r} clashes with {owners[item.event]}")
        else:
            owners[item.event] = f"the event of hook point {point!r}"
