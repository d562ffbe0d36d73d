"""Schema docs rendered as docstrings of generated code: wrapped, indented, quoted.

The docs were checked when the schema was loaded (:mod:`stageware_codegen.load.docs`), so
they cannot end or escape the literal they are written into. Everything else a schema
supplies as text is rendered with ``repr()``.
"""

from __future__ import annotations

import functools
import textwrap

__all__ = ["docstring", "indent_block", "wrap"]

_WIDTH = 92
"""Docstring width: under ruff's 100 columns at the usual class-member indentation."""


def indent_block(text: str, indent: str) -> str:
    """Indent every line of *text* after the first by *indent*; blank lines stay empty."""
    head, *rest = text.split("\n")
    return "\n".join([head, *(indent + line if line else "" for line in rest)])


def wrap(text: str, width: int) -> str:
    """Wrap each line of *text* to *width*, keeping indentation and list-item hangs."""
    out: list[str] = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lead = line[: len(line) - len(body)]
        hang = lead + ("  " if body.startswith("- ") else "    " if lead else "")
        filled = textwrap.fill(
            body,
            width=max(width, len(lead) + 20),
            initial_indent=lead,
            subsequent_indent=hang,
            break_long_words=False,
            break_on_hyphens=False,
        )
        out.append(filled or line)
    return "\n".join(out)


# Pure, and called with the same doc over and over: a schema's stages share fields.
@functools.lru_cache(maxsize=4096)
def docstring(text: str, indent: str = "") -> str:
    """Render validated doc *text* as a triple-quoted literal for code at *indent*.

    Lines are wrapped to fit. A one-line doc stays on one line unless it ends with a
    quote, which would merge with the closing quotes; longer docs close on a line of
    their own.
    """
    text = wrap(text, _WIDTH - len(indent))
    if "\n" not in text and not text.endswith('"') and len(text) + len(indent) + 6 <= 100:
        return f'"""{text}"""'
    return f'"""{indent_block(text, indent)}\n{indent}"""'
