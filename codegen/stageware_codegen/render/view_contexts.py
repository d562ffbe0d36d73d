"""The view of ``contexts.py``: one frozen, keyword-only dataclass per stage.

Builds the field list, ``from_host()`` (applying each field's copy rule), ``replace()``
(only the replaceable fields), ``interrupt()`` and the generated paragraphs that document
copy semantics and what cannot be replaced.
"""

from __future__ import annotations

from typing import Any

from stageware_codegen.resolve import ir as _ir

from .docstrings import docstring, indent_block
from .viewkit import BODY, MEMBER, ModuleView, default_code, quoted_names

__all__ = ["contexts_view"]

_HOME = ".contexts"


def contexts_view(schema: _ir.Schema) -> dict[str, Any]:
    """The view of ``contexts.py``: one frozen, keyword-only dataclass per stage."""
    module = ModuleView(schema, _HOME)
    module.imports.add("dataclasses", "dataclass")
    module.imports.add("typing", "final")
    module.runtime("UNSET", "Unset")
    contexts: list[dict[str, Any]] = []
    factories: list[dict[str, str]] = []
    for stage in schema.stages:
        contexts.append(_context_view(stage, module, factories))
    return {
        "doc": "Stage contexts: what Input and Wrap handlers receive, with typed replace().",
        "imports": module.imports.lines(),
        "factories": factories,
        "contexts": contexts,
    }


def _context_view(
    stage: _ir.Stage, module: ModuleView, factories: list[dict[str, str]]
) -> dict[str, Any]:
    name = f"{stage.name}Context"
    present = [item for item in stage.context if item.copy != "excluded"]
    fields: list[dict[str, Any]] = []
    host_params: list[dict[str, Any]] = []
    host_args: list[dict[str, str]] = []
    replace_params: list[dict[str, str]] = []
    replace_args: list[dict[str, str]] = []
    for item in present:
        assert item.type is not None
        annotation = module.use_type(item.type)
        default = factory = None
        if item.has_default:
            default, factory = default_code(name, item.name, item.type, item.default, module)
            if factory is not None:
                factories.append(factory)
        fields.append(
            {
                "name": item.name,
                "annotation": annotation,
                "default": default,
                "docstring": docstring(item.doc, MEMBER),
            }
        )
        value = _copied(item.copy, item.name, module)
        if factory is not None:
            # A mutable default cannot be a parameter default (it would be shared).
            host_params.append(
                {"name": item.name, "annotation": f"{annotation} | Unset", "default": "UNSET"}
            )
            fresh = f"{factory['name']}()"
            host_args.append(
                {
                    "name": item.name,
                    "value": f"{fresh} if isinstance({item.name}, Unset) else {value}",
                }
            )
        else:
            host_params.append(
                {
                    "name": item.name,
                    "annotation": annotation,
                    "default": repr(item.default) if item.has_default else None,
                }
            )
            host_args.append({"name": item.name, "value": value})
        if item.replace == "allowed":
            replace_params.append({"name": item.name, "annotation": f"{annotation} | Unset"})
            replace_args.append(
                {
                    "name": item.name,
                    "value": f"self.{item.name} if isinstance({item.name}, Unset) else {item.name}",
                }
            )
        else:
            replace_args.append({"name": item.name, "value": f"self.{item.name}"})
    interruptible = stage.interrupt_id is not None
    if interruptible:
        module.imports.add("dataclasses", "field")
        module.imports.add("collections.abc", "Mapping")
        module.imports.add("typing", "Any")
        module.runtime(
            "CallInterrupts",
            "Interrupt",
            "MiddlewareInterruptResult",
            "interrupt_name_hash",
            "resolve_middleware_interrupt",
        )
        host_args.append({"name": "_interrupts", "value": "CallInterrupts(interrupts)"})
        replace_args.append({"name": "_interrupts", "value": "self._interrupts"})
    return {
        "name": name,
        "docstring": docstring(_context_doc(stage), MEMBER),
        "fields": fields,
        "interruptible": interruptible,
        "host_params": host_params,
        "host_args": host_args,
        "host_doc": docstring(_from_host_doc(stage, present), BODY),
        "replace_params": replace_params,
        "replace_args": replace_args,
        "replace_doc": docstring(_replace_doc(stage, present, name), BODY),
        "interrupt_doc": docstring(_interrupt_doc(stage), BODY) if interruptible else "",
        "interrupt_id": _id_expression(stage.interrupt_id)
        if stage.interrupt_id is not None
        else "",
    }


def _copied(copy: str, name: str, module: ModuleView) -> str:
    if copy == "reference":
        return name
    if copy == "deep":
        # The runtime's copier: a deep copy, several times faster than copy.deepcopy on
        # the JSON-like payloads contexts carry.
        module.runtime("copy_payload")
        return f"copy_payload({name})"
    alias = module.imports.add_module("copy")
    return f"{alias}.copy({name})"


def _context_doc(stage: _ir.Stage) -> str:
    parts = [f"Context passed to `{stage.name}Stage` Input and Wrap handlers.", "", stage.doc, ""]
    by_copy: dict[str, list[str]] = {"deep": [], "shallow": [], "reference": []}
    for item in stage.context:
        if item.copy != "excluded":
            by_copy[item.copy].append(item.name)
    copies: list[str] = []
    if by_copy["deep"]:
        copies.append(
            f"{quoted_names(by_copy['deep'])}: deep copies, "
            "so mutating them cannot change host state."
        )
    if by_copy["shallow"]:
        copies.append(
            f"{quoted_names(by_copy['shallow'])}: shallow copies; top-level keys are private, "
            "nested values are shared with the host."
        )
    if by_copy["reference"]:
        copies.append(
            f"{quoted_names(by_copy['reference'])}: the host's own objects, shared by reference."
        )
    # A blank line before each list, which Markdown (the API reference) needs to see one.
    parts += ["Copy semantics (applied by `from_host`):", ""]
    parts.extend(f"- {line}" for line in copies)
    fixed = [
        item for item in stage.context if item.copy != "excluded" and item.replace != "allowed"
    ]
    if fixed:
        parts += ["", "`replace()` cannot set:", ""]
        for item in fixed:
            if item.replace == "unhonoured":
                parts.append(
                    f"- `{item.name}`: the host would not honour a replacement. {item.why}"
                )
            else:
                parts.append(
                    f"- `{item.name}`: fixed for the stage." + (f" {item.why}" if item.why else "")
                )
    excluded = [item for item in stage.context if item.copy == "excluded"]
    if excluded:
        parts += ["", "Not on this context:", ""]
        parts.extend(f"- `{item.name}`: {item.why}" for item in excluded)
    return "\n".join(parts)


def _args_section(items: list[tuple[str, str]]) -> list[str]:
    lines = ["Args:"]
    for name, doc in items:
        lines.append("    " + indent_block(f"{name}: {doc}", "        "))
    return lines


def _from_host_doc(stage: _ir.Stage, present: list[_ir.ContextField]) -> str:
    items = [(item.name, item.doc) for item in present]
    if stage.interrupt_id is not None:
        items.append(
            ("interrupts", "Answered interrupts captured for this run, by id; snapshotted.")
        )
    return "\n".join(
        [
            "Build a context from host state, applying the schema's copy rules.",
            "",
            *_args_section(items),
        ]
    )


def _replace_doc(stage: _ir.Stage, present: list[_ir.ContextField], name: str) -> str:
    replaceable = [item for item in present if item.replace == "allowed"]
    if not replaceable:
        lines = ["Return a copy of this context; none of its fields can be replaced."]
    else:
        omitted = "Omitted fields keep their current value (the same object)"
        # Only worth saying when some parameter accepts None, so it could mean "unset".
        if any(item.type is not None and item.type.accepts_none for item in replaceable):
            omitted += "; an explicit `None` is a replacement"
        lines = ["Return a copy with the given fields replaced.", "", omitted + "."]
    kept = [f"`{item.name}`" for item in present if item.replace != "allowed"]
    if stage.interrupt_id is not None:
        kept.append("the interrupt state")
    if kept:
        listed = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]
        lines += ["", f"{listed} {'is' if len(kept) == 1 else 'are'} carried over unchanged."]
    if replaceable:
        lines += ["", *_args_section([(item.name, item.doc) for item in replaceable])]
    lines += ["", "Returns:", f"    A new `{name}`."]
    return "\n".join(lines)


def _interrupt_doc(stage: _ir.Stage) -> str:
    return "\n".join(
        [
            "Ask a human to decide before the stage goes on.",
            "",
            "The first call raises `InterruptException`, which halts the run; the host registers",
            "the interrupt. When the run resumes with an answer, the same call returns it. A",
            "preemptive `response` skips the question, but a human's stored answer wins over it.",
            "This method only reads interrupt state; it never registers anything.",
            "",
            "Args:",
            "    name: Names the decision. The interrupt id is derived from it and from the",
            "        stage's id template, so it must be unique among all middleware that",
            "        interrupt the same stage: equal names share one answer.",
            "    reason: What the human is asked; surfaced to the caller.",
            "    response: A preemptive answer; when set, no interrupt is raised.",
            "",
            "Returns:",
            "    The answer, wrapped in a `MiddlewareInterruptResult`.",
            "",
            "Raises:",
            "    InterruptException: When no answer is available yet and none was given.",
        ]
    )


def _id_expression(parts: tuple[_ir.IdPart, ...]) -> str:
    pieces: list[str] = []
    for part in parts:
        if part.literal is not None:
            pieces.append(repr(part.literal))
        elif part.name_hash:
            pieces.append("interrupt_name_hash(name)")
        else:
            access = f"self.{part.field}" + "".join(f"[{key!r}]" for key in part.keys)
            access += "".join(f".{attr}" for attr in part.attrs)
            pieces.append(f"str({access})")
    return " + ".join(pieces)
