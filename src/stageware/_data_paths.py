"""Where a value sits in nested data, written the one way stageware's messages write it.

The host names the place of a validation error in a session, a tool's input or result,
or stored interrupt state; the generator names the place of a problem in a schema
document. Both write ``messages[3].content[0].text``, quoting a key only where it would be
ambiguous (``hooks.points['tool.before']``). It needs nothing but the standard library,
so the generator uses it without loading the rest of stageware.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["format_path"]

# A key that can stand bare after a dot: nothing that reads as path syntax or a quote.
_PLAIN_KEY = re.compile(r"[^.\[\]\s'\"]+")


def format_path(path: Sequence[str | int]) -> str:
    """Render *path* (mapping keys and list positions) as ``a.b[0].c``.

    List positions are written ``[0]``; a key with a dot, a bracket, a quote or white
    space, or an empty key, is quoted: ``['tool.before']``. An empty path (the value as a
    whole) renders as ``""``, for the caller to name the whole value its own way.
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out
