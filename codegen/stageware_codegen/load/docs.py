"""Schema docs, held to an alphabet that is safe inside a generated docstring.

Docs are the only schema text written into generated code outside a ``repr()``
(:mod:`stageware_codegen.render.docstrings` writes them), so they are checked here: no
triple quotes (which would end the docstring), no backslashes (escape sequences), and
no control characters other than newline.
"""

from __future__ import annotations

import re

__all__ = ["check_doc"]

# Unicode's control characters (category Cc) but newline, and the line and paragraph
# separators (Zl, Zp).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def check_doc(text: str) -> str:
    """Validate a doc string from the schema and return it normalised.

    Trailing whitespace of each line and surrounding blank lines are dropped, so YAML block
    scalars (``|``, ``>``) and plain scalars give the same result.
    """
    if '"""' in text:
        raise ValueError('docs may not contain \'"""\'')
    if "\\" in text:
        raise ValueError("docs may not contain backslashes")
    control = _CONTROL.search(text)
    if control is not None:
        raise ValueError(f"docs may not contain control character {control.group()!r}")
    lines = [line.rstrip() for line in text.strip().split("\n")]
    if not lines[0]:
        raise ValueError("docs may not be empty")
    return "\n".join(lines)
