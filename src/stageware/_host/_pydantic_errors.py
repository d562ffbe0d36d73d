"""Saying where in the data a pydantic validation error is, the way a person writes a path.

Every message the host builds from a ``ValidationError`` (a stored session, a tool's input
or result, stored interrupt state) names the place with this one rendering. It depends on
nothing but the standard library, so code outside the host can use it too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["error_location"]


def error_location(loc: Sequence[str | int]) -> str:
    """Render a pydantic error location (``error["loc"]``) as ``messages[3].content[0].text``.

    List positions are written ``[3]``; a key that is not an identifier is written
    ``["like this"]`` so the path stays unambiguous. An empty location (the value as a
    whole) renders as ``""``, for the caller to name the whole value its own way.
    """
    parts: list[str] = []
    for segment in loc:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif segment.isidentifier():
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{json.dumps(segment)}]")
    return "".join(parts)
