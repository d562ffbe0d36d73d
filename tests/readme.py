"""The README's and the docs pages' sections and code blocks, for the tests that run them as
written.

A test names a section by its heading, never by the page it is on: :func:`find_section`
looks for it across README.md and every page under docs/, so a section that moves to
another page (or another heading level) keeps its test, and one that is gone or named
twice fails the test with the heading in the message, rather than dropping it silently.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
README: Final = ROOT / "README.md"
DOCS: Final = ROOT / "docs"

_HEADING: Final = re.compile(r"(#{1,6}) +(.*?)\s*$")


@dataclass(frozen=True)
class Section:
    """One section of a page: from its heading line to the next heading of its level or
    higher (its subsections included).

    Attributes:
        path: The page it is on.
        line: The line of its heading, counted from 1.
        text: The section's text, its heading line first.
    """

    path: Path
    line: int
    text: str


def pages() -> list[Path]:
    """README.md, then every Markdown page under docs/, in path order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def is_fence(line: str) -> bool:
    """Whether *line* opens or closes a fenced code block (indented in a list item too)."""
    return line.lstrip(" ").startswith("```")


def headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """``(index, level, title)`` of each heading of *lines*; a ``#`` line inside a code
    block is not a heading."""
    fenced = False
    for index, line in enumerate(lines):
        if is_fence(line):
            fenced = not fenced
        elif not fenced and (found := _HEADING.match(line)):
            yield index, len(found.group(1)), found.group(2)


def find_section(heading: str) -> Section:
    """The one section, on README.md or a docs page, whose heading is *heading*.

    *heading* is the heading's title or its start, with or without its ``#``s (their number
    is not compared: a moved section may change level); ending in a newline, it is the
    whole title.

    Raises:
        LookupError: No heading, or more than one, matches *heading* (the message names
            it and, for several, where each is).
    """
    whole = heading.endswith("\n")
    title = heading.strip().lstrip("#").strip()
    found: list[Section] = []
    for path in pages():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        marks = list(headings(lines))
        for n, (index, level, text) in enumerate(marks):
            if text == title or (not whole and text.startswith(title)):
                end = next((i for i, lv, _ in marks[n + 1 :] if lv <= level), len(lines))
                found.append(Section(path, index + 1, "".join(lines[index:end])))
    if len(found) != 1:
        places = ", ".join(f"{s.path.relative_to(ROOT)}:{s.line}" for s in found)
        raise LookupError(
            f"the heading {heading.strip()!r} is on {places}: one section must match"
            if found
            else f"no heading of README.md or docs/**/*.md matches {heading.strip()!r}"
        )
    return found[0]


def readme_blocks(heading: str, language: str = "python") -> list[str]:
    """The *language* code blocks of the section *heading* (see :func:`find_section`), in
    order; blocks indented in a list item are not among them.

    Raises:
        LookupError: No section, or more than one, has that heading.
    """
    blocks: list[str] = []
    block: list[str] | None = None
    fenced = False
    for line in find_section(heading).text.splitlines(keepends=True)[1:]:
        if line.startswith("```"):
            if block is not None:
                blocks.append("".join(block))
                block = None
            elif not fenced and line.rstrip("\n") == f"```{language}":
                block = []
            fenced = not fenced
            continue
        if block is not None:
            block.append(line)
    return blocks


def first_block(heading: str, after: str = "", language: str = "python") -> str:
    """The first *language* code block of the section *heading* that comes after the text
    *after* (indented blocks too, dedented): for the examples inside a list item.

    Raises:
        LookupError: No section, or more than one, has that heading.
        ValueError: The section has no such text, or no such block after it.
    """
    section = find_section(heading)
    text = section.text
    if after:
        if after not in text:
            raise ValueError(f"{section.path}: the section {heading.strip()!r} lacks {after!r}")
        text = text[text.index(after) :]
    lines = text.splitlines(keepends=True)
    opening = next((n for n, line in enumerate(lines) if line.strip() == f"```{language}"), None)
    if opening is None:
        raise ValueError(f"{section.path}: no {language} block in {heading.strip()!r}")
    indent = lines[opening][: len(lines[opening]) - len(lines[opening].lstrip(" "))]
    body: list[str] = []
    for line in lines[opening + 1 :]:
        if is_fence(line):
            break
        body.append(line.removeprefix(indent))
    return "".join(body)


def run_example(code: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """*code* run by a fresh interpreter in *directory*, its output captured: for the
    examples that launch DBOS at import, as an application does (one DBOS a process)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def page_of(heading: str) -> str:
    """The path of the page the section *heading* is on: the file name to compile its
    examples under, so that a traceback names the page.

    Raises:
        LookupError: No section, or more than one, has that heading.
    """
    return str(find_section(heading).path)
