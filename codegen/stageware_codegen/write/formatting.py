"""Format rendered modules with ruff: all of them in one run, in the staging directory.

ruff is pinned and runs isolated from any project configuration, so the output is
byte-identical on every machine. Its binary runs directly, once per generation, on the
files named one by one (named files are formatted even where a ``.gitignore`` or ruff's
default exclusions would skip a directory walk).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

# ruff ships no type information; its one function returns the binary's path.
from ruff import find_ruff_bin  # type: ignore[import-untyped]  # pyright: ignore[reportMissingTypeStubs]

from stageware_codegen._errors import OutputError

__all__ = ["LINE_LENGTH", "format_modules"]

LINE_LENGTH = 100


def format_modules(texts: Mapping[str, str], directory: Path) -> dict[str, str]:
    """Write *texts* into *directory*, format them there, and return the formatted texts.

    The formatted files stay in *directory*. Syntax is not checked beyond what ruff
    parses: the import check compiles and runs every module.

    Raises:
        OutputError: ruff cannot run, or cannot format a module.
    """
    if not texts:
        return {}
    for name, text in texts.items():
        (directory / name).write_text(text, encoding="utf-8", newline="\n")
    command = [
        find_ruff_bin(),
        "format",
        "--isolated",
        "--no-cache",
        "--quiet",
        "--line-length",
        str(LINE_LENGTH),
        *(str(directory / name) for name in texts),
    ]
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, encoding="utf-8", check=False
        )
    except OSError as exc:
        raise OutputError(f"cannot run ruff: {exc}") from None
    if completed.returncode != 0:
        detail = completed.stderr.strip() or f"exit {completed.returncode}"
        raise OutputError(f"ruff could not format the generated modules: {detail}")
    return {name: (directory / name).read_text(encoding="utf-8") for name in texts}
