"""Finish a rendered module: the banner on top, ruff's formatting, a compile as a check.

ruff is pinned and runs isolated from any project configuration, so the output is
byte-identical on every machine.
"""

from __future__ import annotations

import subprocess
import sys

from stageware_codegen._errors import OutputError

__all__ = ["finish_module"]


def finish_module(filename: str, body: str, banner_text: str) -> str:
    """Prepend *banner_text*, format with ruff and check that the result compiles.

    Raises:
        OutputError: ruff cannot run or format the module, or it does not compile.
    """
    text = banner_text + body
    command = [sys.executable, "-m", "ruff", "format", "--isolated", "--line-length", "100", "-"]
    try:
        completed = subprocess.run(
            command, input=text, capture_output=True, text=True, encoding="utf-8", check=False
        )
    except OSError as exc:
        raise OutputError(f"cannot run ruff: {exc}") from None
    if completed.returncode != 0:
        detail = completed.stderr.strip() or f"exit {completed.returncode}"
        raise OutputError(f"ruff could not format generated {filename}: {detail}")
    formatted = completed.stdout
    try:
        compile(formatted, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise OutputError(f"generated {filename} does not compile: {exc}") from None
    return formatted
