"""The OpenAI-compatible chat-completions model for the reference host.

``OpenAIModel`` talks to OpenAI or to any local server that speaks the same API (vLLM,
llama.cpp, Ollama, LM Studio). It needs the optional ``openai`` package:

```bash
pip install -e '.[openai]'    # in a clone; the README's Install gives a git URL form
```

Its errors, ``ModelError`` and ``ModelThrottledError``, are the ones any model raises; they
are exported by ``stageware`` too, which needs no extra.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._host.models._openai import ModelError, ModelThrottledError, OpenAIModel
except ModuleNotFoundError as _missing:
    # Only a missing `openai` gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] != "openai":
        raise
    raise ImportError(
        f"stageware.openai needs the 'openai' package, from {_extras.needs_extra('openai')}"
    ) from _missing

__all__ = ["ModelError", "ModelThrottledError", "OpenAIModel"]
