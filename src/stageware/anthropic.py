"""The Anthropic Messages API model for the reference host.

``AnthropicModel`` talks to Anthropic's API, or to a server that speaks it (a LiteLLM
proxy's Anthropic endpoint, say), through the official ``anthropic`` SDK. It needs the
optional ``anthropic`` package:

```bash
pip install -e '.[anthropic]'    # in a clone; the README's Install gives a git URL form
```

Its errors (``ModelError``, ``ModelThrottledError``, ``ContextWindowOverflowError``) are
the ones any model raises; they are exported by ``stageware`` too, which needs no extra.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._host.models._anthropic import AnthropicModel
except ModuleNotFoundError as _missing:
    # Only a missing `anthropic` gets the install hint; any other missing module is a bug.
    if _missing.name is None or _missing.name.partition(".")[0] != "anthropic":
        raise
    raise ImportError(
        "stageware.anthropic needs the 'anthropic' package, from "
        + _extras.needs_extra("anthropic")
    ) from _missing

from stageware._host.models._errors import (
    ContextWindowOverflowError,
    ModelError,
    ModelThrottledError,
)

__all__ = [
    "AnthropicModel",
    "ContextWindowOverflowError",
    "ModelError",
    "ModelThrottledError",
]
