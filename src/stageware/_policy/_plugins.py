"""Middleware from plugins: installed distributions with an entry point in ``stageware.middleware``.

A plugin declares, in its ``pyproject.toml``:

```toml
[project.entry-points."stageware.middleware"]
acme = "acme_policies:MIDDLEWARE"
```

The entry point's name (``acme``) is the plugin's namespace: every middleware it
contributes is known by its name qualified with it, so ``no_weekend_refunds`` becomes
``acme.no_weekend_refunds`` (a name that already starts with ``acme.`` is kept). The
entry point may point at a ``MiddlewareDef``, a list or tuple of them, or a module, whose
``MiddlewareDef`` attributes it contributes (those named in its ``__all__`` if it has one,
else its public ones).

Plugins are imported lazily: a spec that asks for ``acme.x`` imports the plugins whose
namespace is ``acme`` and no other, so a broken plugin the spec does not use cannot stop
an application from starting, and loading a policy imports only what it installs. That
holds for a mistyped namespace too: the names suggested then are the entry points'. A
broken plugin (one that fails to import, or points at something else) is a ``SpecError``
naming the distribution and the entry point, raised when a spec asks for its namespace.
Two plugins contributing the same qualified name are an error naming both distributions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, cast, final

from ._author_code import PASSING, describe_failure
from ._declare import MiddlewareDef, check_name
from ._errors import SpecError

if TYPE_CHECKING:
    from importlib import metadata

__all__ = ["GROUP", "Plugin", "PluginIndex", "installed_plugins"]

GROUP = "stageware.middleware"
"""The entry point group plugins declare their middleware in."""


@final
@dataclass(frozen=True)
class Plugin:
    """One entry point in :data:`GROUP`, not imported yet.

    Attributes:
        namespace: The entry point's name, which qualifies its middleware's names.
        value: What it points at (``acme_policies:MIDDLEWARE``).
        distribution: The distribution declaring it, with its version.
    """

    namespace: str
    value: str
    distribution: str
    _entry_point: metadata.EntryPoint = field(repr=False, compare=False)

    @property
    def description(self) -> str:
        """The entry point as its author wrote it, and where it comes from, for messages."""
        return f"entry point '{self.namespace} = {self.value}' of {self.distribution}"

    def load(self) -> tuple[MiddlewareDef, ...]:
        """Import the plugin and return its middleware under their qualified names.

        Raises:
            SpecError: If its name cannot qualify names, it cannot be imported, or it
                contributes something that is not middleware, none, or a name twice.
        """
        try:
            check_name(self.namespace)
        except ValueError:
            raise self._error(
                "its name is not a dotted identifier such as 'acme', so it cannot qualify "
                "the names of its middleware"
            ) from None
        try:
            target = self._entry_point.load()
        except PASSING:
            raise
        except BaseException as exc:  # a plugin's import runs its authors' code
            raise self._error(f"cannot be loaded: {describe_failure(exc)}") from exc
        # The same object exported twice (an alias in a module's __all__) is one middleware.
        found = list({id(declared): declared for declared in self._middleware_in(target)}.values())
        if not found:
            raise self._error("contributes no middleware")
        qualified: dict[str, MiddlewareDef] = {}
        for declared in found:
            name = self._qualify(declared.name)
            if name in qualified:
                raise self._error(f"contributes two middleware named {name!r}")
            qualified[name] = declared if name == declared.name else declared.with_name(name)
        return tuple(qualified.values())

    def _qualify(self, name: str) -> str:
        prefix = f"{self.namespace}."
        return name if name.startswith(prefix) else prefix + name

    def _middleware_in(self, target: object) -> list[MiddlewareDef]:
        if isinstance(target, MiddlewareDef):
            return [target]
        if isinstance(target, (list, tuple)):
            items: list[object] = list(target)  # pyright: ignore[reportUnknownArgumentType]
            for index, item in enumerate(items):
                if not isinstance(item, MiddlewareDef):
                    raise self._error(
                        f"item {index} of {self.value} is {_kind(item)}, not a middleware "
                        "declared with @middleware"
                    )
            return [item for item in items if isinstance(item, MiddlewareDef)]
        if isinstance(target, ModuleType):
            return module_middleware(target)
        raise self._error(
            f"points at {_kind(target)}; it must point at a middleware declared with "
            "@middleware, a list or tuple of them, or a module"
        )

    def _error(self, problem: str) -> SpecError:
        return SpecError(f"plugin {self.description}: {problem}")


def installed_plugins() -> tuple[Plugin, ...]:
    """The entry points in :data:`GROUP` of the installed distributions, none imported."""
    # Imported when plugins are looked up, not with the policy layer: it costs tens of ms.
    from importlib import metadata

    found: list[Plugin] = []
    for entry_point in metadata.entry_points(group=GROUP):
        dist = entry_point.dist
        distribution = "an unknown distribution" if dist is None else f"{dist.name} {dist.version}"
        found.append(Plugin(entry_point.name, entry_point.value, distribution, entry_point))
    return tuple(sorted(found, key=lambda plugin: (plugin.namespace, plugin.distribution)))


class PluginIndex:
    """Finds middleware by qualified name, importing only the plugins of its namespace.

    One index serves one policy load: each plugin is imported at most once.
    """

    def __init__(self, plugins: Iterable[Plugin]) -> None:
        self._plugins = tuple(plugins)
        self._loaded: dict[Plugin, tuple[MiddlewareDef, ...]] = {}

    def find(self, name: str) -> MiddlewareDef:
        """The middleware a plugin contributes as *name* (``acme.no_weekend_refunds``).

        Raises:
            SpecError: If no plugin contributes it (with the closest names), if a plugin of
                its namespace is broken, or if two plugins contribute it.
        """
        candidates = [p for p in self._plugins if name.startswith(f"{p.namespace}.")]
        if not candidates:
            raise SpecError(self._unknown_namespace(name))
        owners: dict[str, tuple[MiddlewareDef, Plugin]] = {}
        for plugin in candidates:
            for declared in self._load(plugin):
                first = owners.get(declared.name)
                if first is not None:
                    raise SpecError(
                        f"middleware {declared.name!r} is contributed twice: by the "
                        f"{first[1].description} and by the {plugin.description}"
                    )
                owners[declared.name] = (declared, plugin)
        if name in owners:
            return owners[name][0]
        providers = ", ".join(plugin.distribution for plugin in candidates)
        provided = ", ".join(sorted(owners))
        raise SpecError(
            f"no middleware {name!r}{_did_you_mean(name, owners)}: the plugins of its "
            f"namespace ({providers}) contribute {provided}"
        )

    def _load(self, plugin: Plugin) -> tuple[MiddlewareDef, ...]:
        if plugin not in self._loaded:
            self._loaded[plugin] = plugin.load()
        return self._loaded[plugin]

    def _unknown_namespace(self, name: str) -> str:
        if not self._plugins:
            return (
                f"no middleware {name!r}: no plugin is installed (none declares an entry "
                f"point in {GROUP!r}); to import one from a module, write "
                "'package.module:attribute'"
            )
        # Suggested from the entry points' names alone: importing the other plugins to
        # find what was meant would run code no spec asked for.
        namespaces = sorted({plugin.namespace for plugin in self._plugins})
        close = difflib.get_close_matches(name.split(".")[0], namespaces, n=1, cutoff=0.6)
        hint = f" (did you mean the namespace {close[0]!r}?)" if close else ""
        if "." in name:
            why = f"no installed plugin has the namespace {name.split('.')[0]!r}"
        else:
            why = (
                "a plugin's middleware is named with the plugin's namespace first "
                f"('namespace.{name}')"
            )
        return (
            f"no middleware {name!r}{hint}: {why} (plugins: {', '.join(namespaces)}); to "
            "import one from a module, write 'package.module:attribute'"
        )


def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    names = list(candidates)
    # A bare or wrongly qualified name whose last part matches is the likeliest meaning.
    same_tail = [known for known in names if known.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]]
    close = same_tail or difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def module_middleware(module: ModuleType) -> list[MiddlewareDef]:
    """The middleware *module* contributes: those its ``__all__`` names, or else its public
    ones. The same object exported twice (an alias) is one middleware."""
    exported: object = getattr(module, "__all__", None)
    if isinstance(exported, (list, tuple)):
        names = [str(name) for name in cast("Iterable[object]", exported)]
    else:
        names = [name for name in vars(module) if not name.startswith("_")]
    found = [getattr(module, name, None) for name in names]
    unique = {id(value): value for value in found if isinstance(value, MiddlewareDef)}
    return list(unique.values())


def _kind(value: object) -> str:
    return f"a {type(value).__name__} ({value!r:.60})"
