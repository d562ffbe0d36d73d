"""Finding the middleware to check: in a module, or in the installed plugins of a namespace.

Plugins are found and loaded by the policy layer's own ``_plugins`` (the entry point
group ``stageware.middleware``, names qualified with the namespace), so the suite checks
exactly the middleware a policy spec would install under the same names.
"""

from __future__ import annotations

from stageware._policy._declare import MiddlewareDef
from stageware._policy._plugins import GROUP, installed_plugins, module_middleware

__all__ = ["module_middleware", "plugin_middleware"]


def plugin_middleware(namespace: str) -> list[MiddlewareDef]:
    """The middleware the installed plugins of *namespace* contribute, qualified.

    Raises:
        LookupError: If no installed plugin has the namespace *namespace*.
        SpecError: If one of them is broken (see ``Plugin.load``).
    """
    plugins = installed_plugins()
    chosen = [plugin for plugin in plugins if plugin.namespace == namespace]
    if not chosen:
        installed = sorted({plugin.namespace for plugin in plugins})
        raise LookupError(
            f"no installed plugin contributes middleware under {namespace!r} (entry point "
            f"group {GROUP!r}); installed namespaces: {', '.join(installed) or 'none'}"
        )
    return [definition for plugin in chosen for definition in plugin.load()]
