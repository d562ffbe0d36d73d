"""Schema docs, held to an alphabet that is safe inside a generated docstring.

Docs are the only schema text written into generated code outside a ``repr()``
(:mod:`stageware_codegen.render.docstrings` writes them), so they are checked here: no
triple quotes (which would end the docstring), no backslashes (escape sequences), and
no control characters other than newline.
"""

from __future__ import annotations

import unicodedata

__all__ = ["check_doc"]


def check_doc(text: str) -> str:
    """Validate a doc string from the schema and return it normalised.

    Trailing whitespace of each line and surrounding blank lines are dropped, so YAML block
    scalars (``|``, ``>``) and plain scalars give the same result.
    """
    if '"""' in text:
        raise ValueError('docs may not contain \'"""\'')
    if "\\" in text:
        raise ValueError("docs may not contain backslashes")
    for char in text:
        if char != "\n" and unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise ValueError(f"docs may not contain control character {char!r}")
    lines = [line.rstrip() for line in text.strip().split("\n")]
    if not lines[0]:
        raise ValueError("docs may not be empty")
    return "\n".join(lines)
