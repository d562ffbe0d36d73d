"""The Amazon Bedrock model for the reference host, on boto3's Converse API.

``BedrockModel`` streams from ``ConverseStream`` with boto3's credentials chain. It needs
the optional ``boto3`` package:

```bash
pip install -e '.[bedrock]'    # in a clone; the README's Install gives a git URL form
```

Its errors, ``ModelError``, ``ModelThrottledError`` and ``ContextWindowOverflowError``, are
the ones any model raises; they are exported by ``stageware`` too, which needs no extra.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._host.models._bedrock import BedrockModel
except ModuleNotFoundError as _missing:
    # Only a missing boto3 (or its botocore) gets the install hint; any other missing
    # module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] not in ("boto3", "botocore"):
        raise
    raise ImportError(
        f"stageware.bedrock needs the 'boto3' package, from {_extras.needs_extra('bedrock')}"
    ) from _missing

from stageware._host.models._errors import (
    ContextWindowOverflowError,
    ModelError,
    ModelThrottledError,
)

__all__ = ["BedrockModel", "ContextWindowOverflowError", "ModelError", "ModelThrottledError"]
