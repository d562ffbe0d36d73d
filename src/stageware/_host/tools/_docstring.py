"""Reading a tool function's docstring: its description and its parameters' descriptions.

The parsing is ``docstring_parser``'s, in whichever style the docstring is written:
Google, NumPy, Sphinx/reST or Epydoc. What is ours is the choice of what a model reads:
the summary and the body up to the first section (``Returns:``, ``Raises:`` and the rest
describe the function to a programmer), and the parameters, one line of text each.

``docstring_parser``'s Google reader is given the section titles it lacks that Google's
style guide and Napoleon name (``Keyword Args:``, ``Other Parameters:``, ``Note:``,
``Warning:``, ``See Also:``, ``Todo:``, ...), so that none of them lands in the description a
model reads (a ``Note:`` may well say what the model must not know); headers are read
whatever their case (``args:``, ``ARGS:``, ``Keyword arguments:``). As its own automatic mode
does, the style whose reader finds the most sections wins.

Where the Google reader fails on a docstring with a Google parameter section (an entry
without a colon, a type with a colon in it such as ``(Literal["a:b"])``), the parameters
come from a line reader of our own instead, which reads each ``name (type): text`` entry
and joins what follows to it, so that one odd entry does not lose the others. The same
reader gives a parameter's description its paragraph breaks, which ``docstring_parser``
drops, where the two agree on its words.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from docstring_parser import Docstring
    from docstring_parser.google import GoogleParser

__all__ = ["parse_docstring"]

# Kinds of documented names that are not the function's parameters.
_NOT_PARAMETERS: Final = frozenset({"attribute"})

# docstring_parser's own Google section titles (its DEFAULT_SECTIONS).
_DEFAULT_TITLES: Final = (
    "Arguments",
    "Args",
    "Parameters",
    "Params",
    "Raises",
    "Exceptions",
    "Except",
    "Attributes",
    "Example",
    "Examples",
    "Returns",
    "Yields",
)
# Google section titles beyond docstring_parser's own, read as parameters.
_MORE_PARAMETER_SECTIONS: Final = (
    "Keyword Args",
    "Keyword Arguments",
    "Other Parameters",
    "Other Args",
    "Other Arguments",
)
# Google and Napoleon section titles docstring_parser does not know, read as notes: they
# end the description, and what they say is for the function's programmer only.
_NOTE_SECTIONS: Final = (
    "Attention",
    "Caution",
    "Danger",
    "Error",
    "Hint",
    "Important",
    "Methods",
    "Note",
    "Notes",
    "References",
    "Return",
    "See Also",
    "Tip",
    "Todo",
    "Warning",
    "Warnings",
    "Warns",
    "Yield",
)
_PARAMETER_TITLES: Final = frozenset(
    {"args", "arguments", "parameters", "params", *map(str.lower, _MORE_PARAMETER_SECTIONS)}
)
# A header line as cleandoc leaves it: unindented, a title and a colon.
_HEADER: Final = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*:\s*")
# "name: text" or "name (type, optional): text"; the type, which may hold a colon, is
# dropped: the schema has it.
_ENTRY: Final = re.compile(r"\*{0,2}(\w+)\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*:(?:\s+(.*)|\s*$)")
_NAME: Final = re.compile(r"\*{0,2}(\w+)")


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

    text = _with_known_titles(inspect.cleandoc(docstring))
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if _title(line) is not None]
    by_line = _line_parameters(lines, headers)
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
            name = _NAME.fullmatch(meta.arg_name)
            if name is None:  # a type with a colon in it, split there
                parameters = {}
                break
            lines_of = (meta.description or "").splitlines()
            joined = _join_paragraphs([line.strip() for line in lines_of])
            kept = by_line.get(name[1])
            # The line reader keeps paragraph breaks: take its text when the words agree.
            same_words = kept is not None and kept.split() == joined.split()
            parameters[name[1]] = kept if same_words and kept is not None else joined
    if headers:
        # A Google docstring, whichever reader won: its description ends at its first
        # section even where the Google reader failed on an entry.
        description = "\n".join(lines[: headers[0]])
    if by_line and not parameters:
        parameters = by_line  # the Google reader failed on this Google docstring
    return description.strip(), parameters


def _with_known_titles(text: str) -> str:
    """*text* with each section header in the spelling docstring_parser knows."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        title = _title(line)
        if title is not None:
            lines[i] = f"{_titles()[title]}:"
    return "\n".join(lines)


def _title(line: str) -> str | None:
    # After cleandoc a header starts its line; an indented "Note:" is text of the entry above.
    match = _HEADER.fullmatch(line)
    if match is None:
        return None
    title = " ".join(match[1].lower().split())
    return title if title in _titles() else None


@functools.cache
def _titles() -> dict[str, str]:
    """Every known section title, lower-cased, to its spelling in ``_google()``."""
    titles = [*_DEFAULT_TITLES, *_MORE_PARAMETER_SECTIONS, *_NOTE_SECTIONS]
    return {title.lower(): title for title in titles}


def _line_parameters(lines: list[str], headers: list[int]) -> dict[str, str]:
    """The entries of the Google parameter sections of *lines*, read line by line."""
    parameters: dict[str, str] = {}
    for start, end in itertools.pairwise([*headers, len(lines)]):
        if _title(lines[start]) in _PARAMETER_TITLES:
            parameters.update(_parameter_section(lines[start + 1 : end]))
    return parameters


def _parameter_section(body: list[str]) -> dict[str, str]:
    content = [line for line in body if line.strip()]
    if not content:
        return {}
    entry_indent = min(_indent(line) for line in content)
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body:
        entry = _ENTRY.fullmatch(line.strip())
        if line.strip() and _indent(line) == entry_indent and entry is not None:
            current = entries.setdefault(entry[1], [])
            current.append(entry[2] or "")
        elif current is not None:
            current.append(line.strip())
    return {name: _join_paragraphs(text) for name, text in entries.items()}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse(text: str) -> Docstring:
    from docstring_parser import ParseError, epydoc, numpydoc, rest

    readers = (_google().parse, rest.parse, numpydoc.parse, epydoc.parse)
    candidates: list[Docstring] = []
    for read in readers:
        try:
            candidates.append(read(text))
        except ParseError:
            continue  # not in that style; NumPy's reader takes any text, so one reads it
    # max() keeps the first of equals: Google, the style the docs show, wins a tie.
    return max(candidates, key=lambda parsed: len(parsed.meta))


@functools.cache
def _google() -> GoogleParser:
    from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

    more = [Section(title, "param", SectionType.MULTIPLE) for title in _MORE_PARAMETER_SECTIONS]
    notes = [Section(title, title.lower(), SectionType.SINGULAR) for title in _NOTE_SECTIONS]
    return GoogleParser([*DEFAULT_SECTIONS, *more, *notes])


def _join_paragraphs(lines: list[str]) -> str:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(paragraph) for paragraph in paragraphs if paragraph)
