"""The public runtime: what generated packages and harness authors build on.

Every package the generator emits, ours or one generated from a user's own schema,
imports the runtime through this module and no private one, so this list is a contract:
stage tokens, the registry and its typed ``add_middleware``, results, interrupts and the
handler types. Users of the built-in stages import the same names from ``stageware``.
"""

from stageware import _runtime
from stageware._runtime import *  # noqa: F403 - the runtime package's __all__ is the list

__all__: list[str] = []
__all__ += _runtime.__all__
