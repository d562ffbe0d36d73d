"""Reading a tool function's docstring: its description and its parameters' descriptions.

The parsing is ``docstring_parser``'s, in whichever style the docstring is written:
Google, NumPy, Sphinx/reST or Epydoc. What is ours is the choice of what a model reads:
the summary and the body up to the first section (``Returns:``, ``Raises:`` and the rest
describe the function to a programmer), and the parameters, one line of text each.

``docstring_parser``'s Google reader is given the section titles it lacks that Google's
style guide and Napoleon name (``Keyword Args:``, ``Other Parameters:``), and, as its own
automatic mode does, the style whose reader finds the most sections wins.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from docstring_parser import Docstring
    from docstring_parser.google import GoogleParser

__all__ = ["parse_docstring"]

# Kinds of documented names that are not the function's parameters.
_NOT_PARAMETERS: Final = frozenset({"attribute"})

# Google section titles beyond docstring_parser's own, read as parameters.
_MORE_PARAMETER_SECTIONS: Final = (
    "Keyword Args",
    "Keyword Arguments",
    "Other Parameters",
    "Other Args",
    "Other Arguments",
)


def parse_docstring(docstring: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and its parameter descriptions.

    The description is the summary and the text after it, up to the first section; a
    docstring that opens with a section has none. A parameter's description has its lines
    joined into one, with a blank line kept as a paragraph break where the style keeps it;
    a type given with the name is dropped (the schema has the type), and so are documented
    attributes.
    """
    if not docstring:
        return "", {}
    from docstring_parser import DocstringParam

    text = inspect.cleandoc(docstring)
    parsed = _parse(text)
    description = ""
    if parsed.short_description and _google().titles_re.match(text) is None:
        description = parsed.short_description
        if parsed.long_description:
            gap = "\n\n" if parsed.blank_after_short_description else "\n"
            description += gap + parsed.long_description
    parameters: dict[str, str] = {}
    for meta in parsed.meta:
        if isinstance(meta, DocstringParam) and meta.args[0] not in _NOT_PARAMETERS:
            lines = (meta.description or "").splitlines()
            parameters[meta.arg_name] = _join_paragraphs([line.strip() for line in lines])
    return description.strip(), parameters


def _parse(text: str) -> Docstring:
    from docstring_parser import ParseError, epydoc, numpydoc, rest

    readers = (_google().parse, rest.parse, numpydoc.parse, epydoc.parse)
    candidates: list[Docstring] = []
    for read in readers:
        try:
            candidates.append(read(text))
        except ParseError:
            continue  # not in that style; NumPy's reader takes any text, so one reads it
    # max() keeps the first of equals: Google, the style the README shows, wins a tie.
    return max(candidates, key=lambda parsed: len(parsed.meta))


@functools.cache
def _google() -> GoogleParser:
    from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

    more = [Section(title, "param", SectionType.MULTIPLE) for title in _MORE_PARAMETER_SECTIONS]
    return GoogleParser([*DEFAULT_SECTIONS, *more])


def _join_paragraphs(lines: list[str]) -> str:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(paragraph) for paragraph in paragraphs if paragraph)
