"""The README's code blocks, for the tests that run them as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Final

README: Final = Path(__file__).resolve().parents[1] / "README.md"

_HEADING: Final = re.compile(r"(#{1,6}) ")


def readme_blocks(heading: str, language: str = "python") -> list[str]:
    """The *language* code blocks of the README section *heading*, in order.

    *heading* is the heading line or its start, ``#``s included (the first line that starts
    so is the one). The section runs to the next heading of its level or higher, its
    subsections included; a ``#`` line inside a code block is not a heading.

    Raises:
        ValueError: No line of the README starts with *heading*.
    """
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next((n for n, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        raise ValueError(f"{README}: no heading starts with {heading!r}")
    level = len(heading) - len(heading.lstrip("#"))
    blocks: list[str] = []
    block: list[str] | None = None
    fenced = False
    for line in lines[start + 1 :]:
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
        elif not fenced and (found := _HEADING.match(line)) and len(found.group(1)) <= level:
            break
    return blocks


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
