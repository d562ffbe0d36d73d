"""What a spec entry's ``use`` names: a plugin's middleware, or a module's attribute.

``acme.no_weekend_refunds`` is looked up among the plugins (``_plugins``);
``package.module:attribute`` is imported, for middleware that ships with the application
rather than in a plugin. Either way the result is a ``MiddlewareDef``; a plugin's comes
with its qualified name, a module's with the name it was declared with.
"""

from __future__ import annotations

import difflib
import importlib

from stageware._policy._author_code import PASSING, describe_failure
from stageware._policy._declare import MiddlewareDef
from stageware._policy._errors import SpecError
from stageware._policy._plugins import PluginIndex

from ._model import is_reference

__all__ = ["resolve"]


def resolve(use: str, plugins: PluginIndex) -> MiddlewareDef:
    """The middleware *use* names.

    Raises:
        SpecError: If it names nothing, or something that is not a declared middleware, or
            if importing its module or plugin fails; the message says which and why.
    """
    if not is_reference(use):
        return plugins.find(use)
    module_name, attribute = use.split(":", 1)
    module = _import(module_name)
    target: object = module
    for depth, part in enumerate(attribute.split(".")):
        if not hasattr(target, part):
            owner = ".".join([module_name, *attribute.split(".")[:depth]])
            known = [name for name in dir(target) if not name.startswith("_")]
            close = difflib.get_close_matches(part, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SpecError(f"{owner!r} has no attribute {part!r}{hint}")
        target = getattr(target, part)
    if not isinstance(target, MiddlewareDef):
        raise SpecError(
            f"{use!r} is a {type(target).__name__}, not a middleware: declare it with "
            "@middleware(hooks=..., fail_mode=...)"
        )
    return target


def _import(name: str) -> object:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise SpecError(
                f"no module named {exc.name!r} (searched sys.path: is the package installed, "
                "or its directory the current one?)"
            ) from exc
        raise SpecError(f"importing {name!r} failed: {type(exc).__name__}: {exc}") from exc
    except PASSING:
        raise
    except BaseException as exc:  # the module's own code ran, and raised or exited
        raise SpecError(f"importing {name!r} failed: {describe_failure(exc)}") from exc
