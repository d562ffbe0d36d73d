"""Finding the middleware to check: in a module, or in an installed plugin.

A plugin is an installed distribution with an entry point in the ``stageware.middleware``
group. The entry point's name is the plugin's namespace; what it points at is a
``MiddlewareDef``, a module, or a list of ``MiddlewareDef``; bare names are qualified with
the namespace (``acme.no_weekend_refunds``), as the policy spec names them.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Final, cast

from stageware._policy._declare import MiddlewareDef

__all__ = ["PLUGIN_GROUP", "middleware_in", "plugin_middleware"]

PLUGIN_GROUP: Final = "stageware.middleware"
"""The entry point group through which plugins contribute middleware."""


def middleware_in(module: ModuleType) -> list[MiddlewareDef]:
    """The middleware *module* exports: those its ``__all__`` names, or else its public ones
    (a plugin whose entry point names a module contributes the same)."""
    exported: object = getattr(module, "__all__", None)
    if isinstance(exported, (list, tuple)):
        names = [str(name) for name in cast("Iterable[object]", exported)]
    else:
        names = [name for name in vars(module) if not name.startswith("_")]
    found = [getattr(module, name, None) for name in names]
    unique = {id(value): value for value in found if isinstance(value, MiddlewareDef)}
    return list(unique.values())


def plugin_middleware(namespace: str) -> list[MiddlewareDef]:
    """The middleware the installed plugins contribute under *namespace*, qualified.

    Raises:
        LookupError: If no installed plugin has an entry point named *namespace*.
        TypeError: If the entry point names something that is not middleware.
    """
    points = [point for point in entry_points(group=PLUGIN_GROUP) if point.name == namespace]
    if not points:
        installed = sorted({point.name for point in entry_points(group=PLUGIN_GROUP)})
        raise LookupError(
            f"no installed plugin contributes middleware under {namespace!r} (entry point "
            f"group {PLUGIN_GROUP!r}); installed namespaces: {', '.join(installed) or 'none'}"
        )
    prefix = f"{namespace}."
    return [
        definition
        if definition.name.startswith(prefix)
        else definition.with_name(prefix + definition.name)
        for point in points
        for definition in _contributed(point)
    ]


def _contributed(point: EntryPoint) -> list[MiddlewareDef]:
    loaded: object = point.load()
    kind = type(loaded).__name__
    if isinstance(loaded, MiddlewareDef):
        return [loaded]
    if isinstance(loaded, ModuleType):
        return middleware_in(loaded)
    if isinstance(loaded, (list, tuple)):
        items = list(cast("Iterable[object]", loaded))
        found = [item for item in items if isinstance(item, MiddlewareDef)]
        if len(found) == len(items):
            return found
    raise TypeError(
        f"entry point {point.name} = {point.value} in group {PLUGIN_GROUP!r} names "
        f"{kind}, not a MiddlewareDef, a module or a list of MiddlewareDef"
    )
