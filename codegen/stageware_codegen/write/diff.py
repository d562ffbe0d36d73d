"""``check``'s answer: a unified diff from the checked-in package to a fresh one."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

from stageware_codegen._errors import OutputError

from .banner import generated_files

__all__ = ["diff_output"]


def diff_output(output: Path, files: Mapping[str, str], shown_as: str) -> str:
    """A unified diff from what is in *output* to *files*; empty when up to date.

    Args:
        output: The directory holding the checked-in generated code.
        files: The freshly generated files.
        shown_as: How *output* is named in the diff headers.

    Raises:
        OutputError: A file in *output* cannot be read.
    """
    try:
        current = generated_files(output)
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputError(f"cannot read {output}: {exc}") from None
    chunks: list[str] = []
    for name in sorted({*current, *files}):
        old, new = current.get(name, ""), files.get(name, "")
        if old == new:
            continue
        label = f"{shown_as}/{name}"
        chunks.extend(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"{label} (checked in)" if name in current else "/dev/null",
                tofile=f"{label} (generated)" if name in files else "/dev/null",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)
